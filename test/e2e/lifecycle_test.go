package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	criv1 "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodeagent/nodeagent/test/framework"
)

// podYAML renders a one-container pod with a short grace period.
func podYAML(name, restartPolicy, script string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: %s}
spec:
  restartPolicy: %s
  terminationGracePeriodSeconds: 2
  containers:
  - name: c
    image: %s
    command: ["sh", "-c", %q]
`, name, restartPolicy, framework.BusyboxImage, script)
}

func TestRestartPolicies(t *testing.T) {
	a := newAgent(t)
	manifests := map[string]string{
		"never-ok":      podYAML("never-ok", "Never", "echo done"),
		"never-fail":    podYAML("never-fail", "Never", "exit 3"),
		"onfailure-ok":  podYAML("onfailure-ok", "OnFailure", "exit 0"),
		"crash":         podYAML("crash", "Always", "echo crashing; exit 1"),
		"onfailure-bad": podYAML("onfailure-bad", "OnFailure", "exit 2"),
	}
	for name, m := range manifests {
		if err := a.WriteManifest(name+".yaml", m); err != nil {
			t.Fatal(err)
		}
	}
	t.Run("Never/exit 0 -> Succeeded, Completed", func(t *testing.T) {
		p, err := a.WaitPod("never-ok", podTimeout, phase(v1.PodSucceeded))
		if err != nil {
			t.Fatal(err)
		}
		cs := status(t, p, "c")
		if term := cs.State.Terminated; term == nil || term.ExitCode != 0 || term.Reason != "Completed" || cs.RestartCount != 0 {
			t.Errorf("container status %+v", cs)
		}
		if !hasCondition(p, v1.PodReady, v1.ConditionFalse) {
			t.Errorf("Ready should be False for a completed pod: %+v", p.Status.Conditions)
		}
	})
	t.Run("Never/exit 3 -> Failed, Error", func(t *testing.T) {
		p, err := a.WaitPod("never-fail", podTimeout, phase(v1.PodFailed))
		if err != nil {
			t.Fatal(err)
		}
		cs := status(t, p, "c")
		if term := cs.State.Terminated; term == nil || term.ExitCode != 3 || term.Reason != "Error" || cs.RestartCount != 0 {
			t.Errorf("container status %+v", cs)
		}
	})
	t.Run("OnFailure/exit 0 -> Succeeded without restart", func(t *testing.T) {
		p, err := a.WaitPod("onfailure-ok", podTimeout, phase(v1.PodSucceeded))
		if err != nil {
			t.Fatal(err)
		}
		if cs := status(t, p, "c"); cs.RestartCount != 0 {
			t.Errorf("restartCount = %d", cs.RestartCount)
		}
	})
	t.Run("Always/crash -> restarts with CrashLoopBackOff", func(t *testing.T) {
		// Restart delays double from 10 s: the second restart comes after a
		// back-off that the status reports as CrashLoopBackOff.
		sawBackoff := false
		p, err := a.WaitPod("crash", 50*time.Second, func(p *v1.Pod) bool {
			cs := p.Status.ContainerStatuses
			if len(cs) == 1 && cs[0].State.Waiting != nil && cs[0].State.Waiting.Reason == "CrashLoopBackOff" {
				sawBackoff = true
				if !strings.Contains(cs[0].State.Waiting.Message, "back-off 10s restarting failed container=c pod=crash-") {
					t.Errorf("back-off message %q", cs[0].State.Waiting.Message)
				}
			}
			return len(cs) == 1 && cs[0].RestartCount >= 2 && sawBackoff
		})
		if err != nil {
			t.Fatal(err)
		}
		cs := status(t, p, "c")
		if last := cs.LastTerminationState.Terminated; last == nil || last.ExitCode != 1 || last.Reason != "Error" {
			t.Errorf("lastState = %+v", cs.LastTerminationState)
		}
		if p.Status.Phase != v1.PodRunning {
			t.Errorf("phase = %s, want Running for restartPolicy Always", p.Status.Phase)
		}
		if got := readLog(t, a, p, "c", int(cs.RestartCount)-1); got != "crashing" {
			t.Errorf("log of restart %d = %q", cs.RestartCount-1, got)
		}
	})
	t.Run("OnFailure/exit 2 -> restarted", func(t *testing.T) {
		if _, err := a.WaitPod("onfailure-bad", podTimeout, func(p *v1.Pod) bool {
			cs := p.Status.ContainerStatuses
			return len(cs) == 1 && cs[0].RestartCount >= 1
		}); err != nil {
			t.Fatal(err)
		}
	})
}

func TestInitContainersRunInOrder(t *testing.T) {
	a := newAgent(t)
	if err := a.WriteManifest("init.yaml", `
apiVersion: v1
kind: Pod
metadata: {name: init}
spec:
  terminationGracePeriodSeconds: 2
  initContainers:
  - {name: first, image: `+framework.BusyboxImage+`, command: ["sh", "-c", "sleep 1; echo first"]}
  - {name: second, image: `+framework.BusyboxImage+`, command: ["sh", "-c", "sleep 1; echo second"]}
  containers:
  - {name: app, image: `+framework.BusyboxImage+`, command: ["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 1; done"]}
`); err != nil {
		t.Fatal(err)
	}
	p, err := a.WaitPod("init", podTimeout, running)
	if err != nil {
		t.Fatal(err)
	}
	first, second, app := status(t, p, "first"), status(t, p, "second"), status(t, p, "app")
	if first.State.Terminated == nil || second.State.Terminated == nil || first.State.Terminated.Reason != "Completed" {
		t.Fatalf("init containers not completed: %+v %+v", first.State, second.State)
	}
	if second.State.Terminated.StartedAt.Before(&first.State.Terminated.FinishedAt) {
		t.Errorf("second init container started %v before the first finished %v",
			second.State.Terminated.StartedAt, first.State.Terminated.FinishedAt)
	}
	if app.State.Running.StartedAt.Before(&second.State.Terminated.FinishedAt) {
		t.Errorf("app started before the init containers finished")
	}
	if !hasCondition(p, v1.PodInitialized, v1.ConditionTrue) {
		t.Errorf("Initialized not True: %+v", p.Status.Conditions)
	}
}

func TestInitContainerFailure(t *testing.T) {
	a := newAgent(t)
	if err := a.WriteManifest("initfail.yaml", `
apiVersion: v1
kind: Pod
metadata: {name: initfail}
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 2
  initContainers:
  - {name: broken, image: `+framework.BusyboxImage+`, command: ["sh", "-c", "exit 7"]}
  containers:
  - {name: app, image: `+framework.BusyboxImage+`, command: ["sleep", "3600"]}
`); err != nil {
		t.Fatal(err)
	}
	p, err := a.WaitPod("initfail", podTimeout, phase(v1.PodFailed))
	if err != nil {
		t.Fatal(err)
	}
	if term := status(t, p, "broken").State.Terminated; term == nil || term.ExitCode != 7 {
		t.Errorf("init container status %+v", status(t, p, "broken").State)
	}
	if w := status(t, p, "app").State.Waiting; w == nil || w.Reason != "PodInitializing" {
		t.Errorf("app container should never start, status %+v", status(t, p, "app").State)
	}
	if len(containersOf(t, string(p.UID))) != 1 {
		t.Errorf("the app container was created despite the failed init container")
	}
	if !hasCondition(p, v1.PodInitialized, v1.ConditionFalse) {
		t.Errorf("Initialized should be False: %+v", p.Status.Conditions)
	}
}

func TestOOMKilledContainer(t *testing.T) {
	a := newAgent(t)
	if err := a.WriteManifest("oom.yaml", `apiVersion: v1
kind: Pod
metadata: {name: oom}
spec:
  restartPolicy: Never
  containers:
  - name: hog
    image: `+framework.BusyboxImage+`
    # tail keeps the current line in memory; /dev/zero never ends it.
    command: ["tail", "/dev/zero"]
    resources:
      limits: {memory: 24Mi}
`); err != nil {
		t.Fatal(err)
	}
	p, err := a.WaitPod("oom", podTimeout, phase(v1.PodFailed))
	if err != nil {
		t.Fatal(err)
	}
	term := status(t, p, "hog").State.Terminated
	if term == nil || term.Reason != "OOMKilled" || term.ExitCode != 137 {
		t.Errorf("terminated state %+v, want OOMKilled with exit code 137", term)
	}
}

// A pod that completed runs again when its manifest changes.
func TestCompletedPodRerunsWhenManifestChanges(t *testing.T) {
	a := newAgent(t)
	if err := a.WriteManifest("job.yaml", podYAML("job", "Never", "echo run-1")); err != nil {
		t.Fatal(err)
	}
	first, err := a.WaitPod("job", podTimeout, phase(v1.PodSucceeded))
	if err != nil {
		t.Fatal(err)
	}
	if err := a.WriteManifest("job.yaml", podYAML("job", "Never", "echo run-2")); err != nil {
		t.Fatal(err)
	}
	second, err := a.WaitPod("job", podTimeout, func(p *v1.Pod) bool {
		return p.Status.Phase == v1.PodSucceeded && len(p.Status.ContainerStatuses) == 1 &&
			p.Status.ContainerStatuses[0].ContainerID != first.Status.ContainerStatuses[0].ContainerID
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := readLog(t, a, second, "c", 0); got != "run-2" {
		t.Errorf("second run logged %q, want run-2", got)
	}
}

// A pod past its activeDeadlineSeconds is stopped and Failed with
// DeadlineExceeded.
func TestActiveDeadlineFailsPod(t *testing.T) {
	a := newAgent(t)
	if err := a.WriteManifest("deadline.yaml", `apiVersion: v1
kind: Pod
metadata: {name: deadline}
spec:
  activeDeadlineSeconds: 3
  terminationGracePeriodSeconds: 2
  containers:
  - name: c
    image: `+framework.BusyboxImage+`
    command: ["sh", "-c", "trap 'exit 0' TERM; sleep 3600 & wait"]
`); err != nil {
		t.Fatal(err)
	}
	if _, err := a.WaitPod("deadline", podTimeout, running); err != nil {
		t.Fatal(err)
	}
	p, err := a.WaitPod("deadline", podTimeout, func(p *v1.Pod) bool {
		return p.Status.Phase == v1.PodFailed && len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].State.Terminated != nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if p.Status.Reason != "DeadlineExceeded" || p.Status.Message != "Pod was active on the node longer than the specified deadline" {
		t.Errorf("reason %q message %q", p.Status.Reason, p.Status.Message)
	}
	if !hasCondition(p, v1.PodReady, v1.ConditionFalse) {
		t.Errorf("Ready after the deadline: %+v", p.Status.Conditions)
	}
	for _, c := range containersOf(t, string(p.UID)) {
		if c.State != criv1.ContainerState_CONTAINER_EXITED {
			t.Errorf("container %s still %s", c.Metadata.Name, c.State)
		}
	}
}

// A sidecar (an init container that restarts always) starts before the
// app, keeps running beside it, and is stopped after it once the app has
// completed; the pod's phase follows the app.
func TestSidecarOutlivesApp(t *testing.T) {
	a := newAgent(t)
	if err := a.WriteManifest("sidecar.yaml", `apiVersion: v1
kind: Pod
metadata: {name: sidecar}
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 5
  initContainers:
  - name: side
    image: `+framework.BusyboxImage+`
    restartPolicy: Always
    command: ["sh", "-c", "trap 'echo side-term; exit 0' TERM; echo side-start; sleep 3600 & wait"]
  containers:
  - name: app
    image: `+framework.BusyboxImage+`
    command: ["sh", "-c", "until [ -f /tmp/done ]; do sleep 0.2; done; echo app-done"]
`); err != nil {
		t.Fatal(err)
	}
	p, err := a.WaitPod("sidecar", podTimeout, func(p *v1.Pod) bool {
		return running(p) && len(p.Status.InitContainerStatuses) == 1 && p.Status.InitContainerStatuses[0].State.Running != nil
	})
	if err != nil {
		t.Fatal(err)
	}
	side, app := status(t, p, "side"), status(t, p, "app")
	if !side.State.Running.StartedAt.Before(&app.State.Running.StartedAt) && !side.State.Running.StartedAt.Equal(&app.State.Running.StartedAt) {
		t.Errorf("the app started (%s) before the sidecar (%s)", app.State.Running.StartedAt, side.State.Running.StartedAt)
	}
	if !hasCondition(p, v1.PodInitialized, v1.ConditionTrue) || !hasCondition(p, v1.PodReady, v1.ConditionTrue) {
		t.Errorf("conditions with the sidecar running: %+v", p.Status.Conditions)
	}
	execIn(t, p, "app", "touch", "/tmp/done")
	p, err = a.WaitPod("sidecar", podTimeout, func(p *v1.Pod) bool {
		return p.Status.Phase == v1.PodSucceeded && p.Status.InitContainerStatuses[0].State.Terminated != nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sideEnd, appEnd := status(t, p, "side").State.Terminated.FinishedAt, status(t, p, "app").State.Terminated.FinishedAt
	if sideEnd.Before(&appEnd) {
		t.Errorf("the sidecar finished (%s) before the app (%s)", sideEnd, appEnd)
	}
	if got := readLog(t, a, p, "side", 0); got != "side-start\nside-term" {
		t.Errorf("sidecar log %q: want it started, then stopped with SIGTERM", got)
	}
}
