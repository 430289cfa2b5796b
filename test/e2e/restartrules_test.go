package e2e

import (
	"fmt"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/nodeagent/nodeagent/test/framework"
)

// rulesPod is a pod whose container c counts its runs in an emptyDir and
// exits with the code the run's place in exits gives (the last one from
// then on), under the given pod and container restart policies and rules.
func rulesPod(name, podPolicy, containerPolicy, rules string, exits ...int) string {
	script := "n=$(cat /d/n 2>/dev/null || echo 0); n=$((n+1)); echo $n > /d/n; echo run=$n"
	for i, code := range exits[:len(exits)-1] {
		script += fmt.Sprintf("; [ $n -eq %d ] && exit %d", i+1, code)
	}
	script += fmt.Sprintf("; exit %d", exits[len(exits)-1])
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: %s}
spec:
  restartPolicy: %s
  terminationGracePeriodSeconds: 2
  volumes: [{name: d, emptyDir: {}}]
  containers:
  - name: c
    image: %s
    command: ["sh", "-c", %q]
    volumeMounts: [{name: d, mountPath: /d}]
    restartPolicy: %s
    restartPolicyRules: %s
`, name, podPolicy, framework.BusyboxImage, script, containerPolicy, rules)
}

const restartOn42 = `[{action: Restart, exitCodes: {operator: In, values: [42]}}]`

// Container restart rules (KEP-5307) on the real runtime: in a pod with
// restartPolicy Never, a container with restartPolicy Never and a rule
// restarting on exit code 42 is restarted for 42 (with the usual
// back-off) and not for any other code; a container's Never overrides a
// pod's Always.
func TestContainerRestartRules(t *testing.T) {
	a := newAgent(t)
	manifests := map[string]string{
		"rule-then-ok":   rulesPod("rule-then-ok", "Never", "Never", restartOn42, 42, 42, 0),
		"rule-then-fail": rulesPod("rule-then-fail", "Never", "Never", restartOn42, 42, 3),
		"no-match":       rulesPod("no-match", "Never", "Never", restartOn42, 1),
		"override":       rulesPod("override", "Always", "Never", "[]", 0),
	}
	for name, m := range manifests {
		if err := a.WriteManifest(name+".yaml", m); err != nil {
			t.Fatal(err)
		}
	}
	finished := func(name string, ph v1.PodPhase, restarts int32, exit int32) {
		t.Helper()
		p, err := a.WaitPod(name, podTimeout, phase(ph))
		if err != nil {
			t.Fatal(err)
		}
		cs := status(t, p, "c")
		if term := cs.State.Terminated; term == nil || term.ExitCode != exit || cs.RestartCount != restarts {
			t.Errorf("%s: container status %+v, want terminated with %d after %d restarts", name, cs, exit, restarts)
		}
		if got := readLog(t, a, p, "c", int(cs.RestartCount)); got != fmt.Sprintf("run=%d", restarts+1) {
			t.Errorf("%s: log of the last run %q, want run=%d", name, got, restarts+1)
		}
	}
	t.Run("exit 42 twice, then 0: restarted twice, Succeeded", func(t *testing.T) {
		finished("rule-then-ok", v1.PodSucceeded, 2, 0)
	})
	t.Run("exit 42, then 3: restarted once, Failed", func(t *testing.T) {
		finished("rule-then-fail", v1.PodFailed, 1, 3)
	})
	t.Run("exit 1 matches no rule: not restarted, Failed", func(t *testing.T) {
		finished("no-match", v1.PodFailed, 0, 1)
	})
	t.Run("container Never in an Always pod: exit 0 not restarted, Succeeded", func(t *testing.T) {
		finished("override", v1.PodSucceeded, 0, 0)
	})
}

// A pod with hostUsers: false never runs on containerd 1.6, which reports
// no runtime handlers and so no user namespace support: sandbox creation
// fails with the kubelet's error, as an event, and the pod stays Pending
// with nothing created in the runtime.
func TestHostUsersFalseRefused(t *testing.T) {
	if userNamespacesSupported(t) {
		t.Skip("the runtime supports user namespaces: TestHostUsersFalse runs the pod")
	}
	a := newAgent(t)
	if err := a.WriteManifest("userns.yaml", usernsPod); err != nil {
		t.Fatal(err)
	}
	waitNoSandbox(t, a, "userns", "reason=FailedCreatePodSandBox message=\"Failed to create pod sandbox: can't set `spec.hostUsers: false`, runtime does not support user namespaces\"")
}

// supplementalGroupsPolicy Strict is rejected at admission where the
// runtime (containerd 1.6) does not announce support, with the kubelet's
// reason and message; Merge runs, with no container user reported.
func TestSupplementalGroupsPolicyStrictRefused(t *testing.T) {
	if runtimeFeatures(t).SupplementalGroupsPolicy {
		t.Skip("the runtime supports supplementalGroupsPolicy: TestSupplementalGroupsPolicyStrict runs the pods")
	}
	a := newAgent(t)
	pod := func(name, policy string) string { return groupsPod(name, policy, framework.BusyboxImage) }
	if err := a.WriteManifest("strict.yaml", pod("strict", "Strict")); err != nil {
		t.Fatal(err)
	}
	if err := a.WriteManifest("merge.yaml", pod("merge", "Merge")); err != nil {
		t.Fatal(err)
	}
	rejected, err := a.WaitPod("strict", podTimeout, phase(v1.PodFailed))
	if err != nil {
		t.Fatal(err)
	}
	const wantMsg = "Pod was rejected: SupplementalGroupsPolicy=Strict is not supported in this node"
	if rejected.Status.Reason != "SupplementalGroupsPolicyNotSupported" || rejected.Status.Message != wantMsg {
		t.Errorf("strict pod status %s %q", rejected.Status.Reason, rejected.Status.Message)
	}
	if cs := containersOf(t, string(rejected.UID)); len(cs) != 0 {
		t.Errorf("containers created for the rejected pod: %d", len(cs))
	}
	merge, err := a.WaitPod("merge", podTimeout, running)
	if err != nil {
		t.Fatal(err)
	}
	// containerd 1.6 reports no container user, so neither does the status.
	if u := status(t, merge, "c").User; u != nil {
		t.Errorf("merge pod's container user %+v, want none from this runtime", u)
	}
}

// An image volume goes to the runtime as a CRI image mount, as the kubelet
// sends it; containerd 1.6 does not know image mounts and fails the
// container's creation, which the pod shows (CreateContainerError) instead
// of waiting for a volume that never comes.
func TestImageVolumeOnOldRuntime(t *testing.T) {
	if ok, rt := imageVolumesRuntime(t); ok {
		t.Skipf("%s mounts image volumes: TestImageVolume runs the pod", rt)
	}
	a := newAgent(t)
	if err := a.WriteManifest("imgvol.yaml", imageVolumePod(framework.BusyboxImage, "{name: img, mountPath: /img}")); err != nil {
		t.Fatal(err)
	}
	p, err := a.WaitPod("imgvol", podTimeout, func(p *v1.Pod) bool {
		cs := p.Status.ContainerStatuses
		return len(cs) == 1 && cs[0].State.Waiting != nil && cs[0].State.Waiting.Reason == "CreateContainerError"
	})
	if err != nil {
		t.Fatal(err)
	}
	// containerd 1.6 treats the mount as a bind of host path "".
	w := p.Status.ContainerStatuses[0].State.Waiting
	if !strings.HasPrefix(w.Message, "failed to generate container ") || !strings.HasSuffix(w.Message, `spec: failed to generate spec: failed to mkdir "": mkdir : no such file or directory`) {
		t.Errorf("waiting message %q, want containerd's own", w.Message)
	}
	if p.Status.Phase != v1.PodPending {
		t.Errorf("phase %s, want Pending", p.Status.Phase)
	}
}
