package e2e

import (
	"fmt"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/nodeagent/nodeagent/test/framework"
)

// hookPod renders a pod whose container logs "started", and "term" on
// SIGTERM, with the given lifecycle (YAML, indented for the container).
func hookPod(name, env, lifecycle string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: %s}
spec:
  terminationGracePeriodSeconds: 10
  containers:
  - name: c
    image: %s
    command: ["sh", "-c", "trap 'echo term; exit 0' TERM; echo started; sleep 3600 & wait"]
    env: [{name: X, value: %q}]
    lifecycle:
%s`, name, framework.BusyboxImage, env, lifecycle)
}

// A postStart hook runs in the container right after it starts.
func TestPostStartHookRunsInContainer(t *testing.T) {
	a := newAgent(t)
	if err := a.WriteManifest("post.yaml", hookPod("post", "1", `      postStart:
        exec: {command: ["sh", "-c", "echo from-hook > /tmp/poststart"]}
`)); err != nil {
		t.Fatal(err)
	}
	p, err := a.WaitPod("post", podTimeout, running)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(execIn(t, p, "c", "cat", "/tmp/poststart")); got != "from-hook" {
		t.Errorf("/tmp/poststart = %q", got)
	}
}

// A failing postStart hook kills the container, which restarts.
func TestFailedPostStartHookKillsContainer(t *testing.T) {
	a := newAgent(t)
	if err := a.WriteManifest("badpost.yaml", hookPod("badpost", "1", `      postStart:
        exec: {command: ["sh", "-c", "echo nope >&2; exit 3"]}
`)); err != nil {
		t.Fatal(err)
	}
	if _, err := a.WaitPod("badpost", podTimeout, func(p *v1.Pod) bool {
		return len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].RestartCount >= 1
	}); err != nil {
		t.Fatal(err)
	}
	want := `FailedPostStartHook message="Exec lifecycle hook ([sh -c echo nope >&2; exit 3]) for Container \"c\" in Pod \"badpost-e2e-node_default(`
	if err := a.WaitLog(want, podTimeout); err != nil {
		t.Error(err)
	}
}

// A preStop hook runs before the container gets SIGTERM: its output comes
// before the container's own reaction in the log of the stopped instance.
func TestPreStopHookRunsBeforeSIGTERM(t *testing.T) {
	a := newAgent(t)
	lifecycle := `      preStop:
        exec: {command: ["sh", "-c", "sleep 1; echo prestop > /proc/1/fd/1"]}
`
	if err := a.WriteManifest("pre.yaml", hookPod("pre", "1", lifecycle)); err != nil {
		t.Fatal(err)
	}
	if _, err := a.WaitPod("pre", podTimeout, running); err != nil {
		t.Fatal(err)
	}
	// A changed container is stopped (preStop, then SIGTERM) and started again.
	if err := a.WriteManifest("pre.yaml", hookPod("pre", "2", lifecycle)); err != nil {
		t.Fatal(err)
	}
	p, err := a.WaitPod("pre", podTimeout, func(p *v1.Pod) bool {
		return running(p) && p.Status.ContainerStatuses[0].RestartCount == 1
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := readLog(t, a, p, "c", 0); got != "started\nprestop\nterm" {
		t.Errorf("log of the stopped container = %q, want started, prestop, term in that order", got)
	}
}
