package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/nodeagent/nodeagent/test/framework"
)

// probedPod renders a one-container busybox pod running script, with the
// given probe lines (YAML, indented for the container) and a short grace.
func probedPod(name, script, probes string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: %s}
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: c
    image: %s
    command: ["sh", "-c", %q]
%s`, name, framework.BusyboxImage, "trap 'exit 0' TERM; "+script, probes)
}

// execIn runs a command in the pod's running container c through the CRI.
func execIn(t *testing.T, p *v1.Pod, c string, cmd ...string) string {
	t.Helper()
	id := status(t, p, c).ContainerID
	id = id[strings.Index(id, "://")+3:]
	res, err := cri.ExecSync(context.Background(), id, cmd, 10*time.Second)
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("exec %v in %s: %v %+v", cmd, p.Name, err, res)
	}
	return string(res.Stdout)
}

// lineCount counts the lines of a file in the container (0 if missing).
func lineCount(t *testing.T, p *v1.Pod, c, path string) int {
	t.Helper()
	out := execIn(t, p, c, "sh", "-c", "cat "+path+" 2>/dev/null | wc -l")
	var n int
	fmt.Sscan(strings.TrimSpace(out), &n)
	return n
}

func containerReady(p *v1.Pod, ready bool) bool {
	return running(p) && p.Status.ContainerStatuses[0].Ready == ready &&
		hasCondition(p, v1.ContainersReady, condition(ready)) && hasCondition(p, v1.PodReady, condition(ready))
}

func condition(b bool) v1.ConditionStatus {
	if b {
		return v1.ConditionTrue
	}
	return v1.ConditionFalse
}

// An exec liveness probe keeps a healthy container and restarts it once
// the file it checks is gone, with the kubelet's event messages.
func TestExecLivenessProbeRestartsContainer(t *testing.T) {
	a := newAgent(t)
	if err := a.WriteManifest("live.yaml", probedPod("live", "touch /tmp/health; sleep 3600 & wait", `    livenessProbe:
      exec: {command: ["sh", "-c", "echo x >> /tmp/probed; cat /tmp/health"]}
      periodSeconds: 1
      failureThreshold: 1
`)); err != nil {
		t.Fatal(err)
	}
	p, err := a.WaitPod("live", podTimeout, func(p *v1.Pod) bool { return containerReady(p, true) })
	if err != nil {
		t.Fatal(err)
	}
	// The probe has run (and passed) several times: no restart.
	waitUntil(t, podTimeout, "3 liveness probes", func() bool { return lineCount(t, p, "c", "/tmp/probed") >= 3 })
	if p, _ = a.Pod("live"); status(t, p, "c").RestartCount != 0 {
		t.Fatalf("restarted while healthy: %+v", status(t, p, "c"))
	}
	execIn(t, p, "c", "rm", "/tmp/health")
	p, err = a.WaitPod("live", podTimeout, func(p *v1.Pod) bool {
		return running(p) && status(t, p, "c").RestartCount == 1
	})
	if err != nil {
		t.Fatal(err)
	}
	if last := status(t, p, "c").LastTerminationState.Terminated; last == nil {
		t.Errorf("lastState after the liveness kill: %+v", status(t, p, "c").LastTerminationState)
	}
	for _, want := range []string{"Liveness probe failed", "Container c failed liveness probe, will be restarted"} {
		if err := a.WaitLog(want, 10*time.Second); err != nil {
			t.Error(err)
		}
	}
}

// An httpGet readiness probe flips the container's and the pod's
// readiness both ways without restarting anything.
func TestHTTPReadinessProbeFlipsReady(t *testing.T) {
	a := newAgent(t)
	if err := a.WriteManifest("ready.yaml", probedPod("ready", "mkdir -p /www && echo ok > /www/ok && httpd -f -p 8080 -h /www & wait", `    ports: [{name: web, containerPort: 8080}]
    readinessProbe:
      httpGet: {path: /ok, port: web}
      periodSeconds: 1
      failureThreshold: 1
`)); err != nil {
		t.Fatal(err)
	}
	p, err := a.WaitPod("ready", podTimeout, func(p *v1.Pod) bool { return containerReady(p, true) })
	if err != nil {
		t.Fatal(err)
	}
	execIn(t, p, "c", "rm", "/www/ok")
	if p, err = a.WaitPod("ready", podTimeout, func(p *v1.Pod) bool { return containerReady(p, false) }); err != nil {
		t.Fatal(err)
	}
	execIn(t, p, "c", "sh", "-c", "echo ok > /www/ok")
	if p, err = a.WaitPod("ready", podTimeout, func(p *v1.Pod) bool { return containerReady(p, true) }); err != nil {
		t.Fatal(err)
	}
	if n := status(t, p, "c").RestartCount; n != 0 {
		t.Errorf("readiness restarted the container %d times", n)
	}
	if err := a.WaitLog("Readiness probe failed: HTTP probe failed with statuscode: 404", 10*time.Second); err != nil {
		t.Error(err)
	}
}

// A startup probe holds the liveness probe (which would fail) and
// readiness until it succeeds.
func TestStartupProbeGatesLiveness(t *testing.T) {
	a := newAgent(t)
	if err := a.WriteManifest("slow.yaml", probedPod("slow", "sleep 3600 & wait", `    startupProbe:
      exec: {command: ["sh", "-c", "echo x >> /tmp/startup; cat /tmp/started"]}
      periodSeconds: 1
      failureThreshold: 600
    livenessProbe:
      exec: {command: ["cat", "/tmp/started"]}
      periodSeconds: 1
      failureThreshold: 1
`)); err != nil {
		t.Fatal(err)
	}
	p, err := a.WaitPod("slow", podTimeout, running)
	if err != nil {
		t.Fatal(err)
	}
	waitUntil(t, podTimeout, "3 startup probes", func() bool { return lineCount(t, p, "c", "/tmp/startup") >= 3 })
	p, _ = a.Pod("slow")
	cs := status(t, p, "c")
	if cs.RestartCount != 0 || cs.Started == nil || *cs.Started || cs.Ready {
		t.Fatalf("before the startup probe passed: restarts %d started %v ready %v (liveness must not run yet)", cs.RestartCount, cs.Started, cs.Ready)
	}
	execIn(t, p, "c", "touch", "/tmp/started")
	p, err = a.WaitPod("slow", podTimeout, func(p *v1.Pod) bool {
		cs := p.Status.ContainerStatuses
		return containerReady(p, true) && cs[0].Started != nil && *cs[0].Started
	})
	if err != nil {
		t.Fatal(err)
	}
	if n := status(t, p, "c").RestartCount; n != 0 {
		t.Errorf("restarts = %d", n)
	}
}

// A tcpSocket readiness probe passes once something listens.
func TestTCPReadinessProbe(t *testing.T) {
	a := newAgent(t)
	if err := a.WriteManifest("tcp.yaml", probedPod("tcp", "until [ -f /tmp/go ]; do sleep 0.2; done; httpd -f -p 8081 & wait", `    readinessProbe:
      tcpSocket: {port: 8081}
      periodSeconds: 1
`)); err != nil {
		t.Fatal(err)
	}
	p, err := a.WaitPod("tcp", podTimeout, running)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.WaitLog("Readiness probe failed: dial tcp", podTimeout); err != nil {
		t.Fatal(err)
	}
	if p, _ = a.Pod("tcp"); status(t, p, "c").Ready {
		t.Fatal("ready before anything listens")
	}
	execIn(t, p, "c", "touch", "/tmp/go")
	if _, err := a.WaitPod("tcp", podTimeout, func(p *v1.Pod) bool { return containerReady(p, true) }); err != nil {
		t.Fatal(err)
	}
}

// A grpc readiness probe follows the standard health service.
func TestGRPCReadinessProbe(t *testing.T) {
	img, err := framework.GoImage("./test/images/grpchealth")
	if err != nil {
		t.Fatal(err)
	}
	ref, err := reg.Push("e2e/grpchealth", "1", img)
	if err != nil {
		t.Fatal(err)
	}
	removeImage(t, ref) // registered before the agent: runs after its cleanup
	a := newAgent(t)
	if err := a.WriteManifest("grpc.yaml", fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: grpc}
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: c
    image: %s
    args: ["-port", "9090"]
    readinessProbe:
      grpc: {port: 9090, service: svc}
      periodSeconds: 1
      failureThreshold: 1
`, ref)); err != nil {
		t.Fatal(err)
	}
	p, err := a.WaitPod("grpc", podTimeout, func(p *v1.Pod) bool { return containerReady(p, true) })
	if err != nil {
		t.Fatal(err)
	}
	execIn(t, p, "c", "/grpchealth", "-set", "NOT_SERVING")
	if _, err := a.WaitPod("grpc", podTimeout, func(p *v1.Pod) bool { return containerReady(p, false) }); err != nil {
		t.Fatal(err)
	}
	if err := a.WaitLog(`Readiness probe failed: service unhealthy (responded with \"NOT_SERVING\")`, 10*time.Second); err != nil {
		t.Error(err)
	}
}

// waitUntil polls cond until it holds or fails the test after timeout.
func waitUntil(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not seen within %s", what, timeout)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// A container its liveness probe kills every time it runs backs off as one
// that crashes: as upstream (the back-off is measured from the exit before
// the kill), the first two kills restart it at once, the third waits in
// CrashLoopBackOff, and from then on each back-off, doubling, lets exactly
// one restart through.
func TestLivenessKillsBackOff(t *testing.T) {
	a := newAgent(t)
	if err := a.WriteManifest("clbo.yaml", probedPod("clbo", "sleep 3600 & wait", `    livenessProbe:
      exec: {command: ["false"]}
      periodSeconds: 1
      failureThreshold: 1
`)); err != nil {
		t.Fatal(err)
	}
	backingOff := func(p *v1.Pod, d string) bool {
		cs := p.Status.ContainerStatuses
		return len(cs) == 1 && cs[0].State.Waiting != nil && cs[0].State.Waiting.Reason == "CrashLoopBackOff" &&
			strings.HasPrefix(cs[0].State.Waiting.Message, "back-off "+d+" restarting failed container=c pod=clbo-")
	}
	p, err := a.WaitPod("clbo", podTimeout, func(p *v1.Pod) bool { return backingOff(p, "10s") })
	if err != nil {
		t.Fatal(err)
	}
	first := status(t, p, "c")
	if first.RestartCount != 2 || first.LastTerminationState.Terminated == nil {
		t.Fatalf("first back-off: want restartCount 2 (two immediate restarts) and a last state, got %+v", first)
	}
	// Until the 20 s back-off shows, one restart at most, and it happened.
	most := first.RestartCount
	p, err = a.WaitPod("clbo", 2*podTimeout, func(p *v1.Pod) bool {
		if cs := p.Status.ContainerStatuses; len(cs) == 1 && cs[0].RestartCount > most {
			most = cs[0].RestartCount
		}
		return backingOff(p, "20s")
	})
	if err != nil {
		t.Fatal(err)
	}
	if most != first.RestartCount+1 || status(t, p, "c").RestartCount != most {
		t.Errorf("restarts between the 10s and 20s back-offs: saw up to %d, now %d; want exactly %d",
			most, status(t, p, "c").RestartCount, first.RestartCount+1)
	}
	for _, want := range []string{"Container c failed liveness probe, will be restarted", "Back-off restarting failed container c in pod clbo-"} {
		if err := a.WaitLog(want, 10*time.Second); err != nil {
			t.Error(err)
		}
	}
}
