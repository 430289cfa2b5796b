package e2e

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	criv1 "k8s.io/cri-api/pkg/apis/runtime/v1"

	nart "github.com/nodeagent/nodeagent/pkg/runtime"
	"github.com/nodeagent/nodeagent/test/framework"
)

const crashingPod = `apiVersion: v1
kind: Pod
metadata: {name: crash}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: c
    image: ` + framework.BusyboxImage + `
    command: ["sh", "-c", "echo run; exit 1"]
`

const completedPod = `apiVersion: v1
kind: Pod
metadata: {name: done}
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 1
  containers:
  - name: c
    image: ` + framework.BusyboxImage + `
    command: ["sh", "-c", "echo done"]
`

// TestContainerGC: the kubelet's container GC policy (MaxPerPodContainer
// 1) leaves a restarting container one dead instance, and its log file
// goes with the removed ones; pods deleted while the agent was stopped
// leave neither container nor sandbox nor log directory once the agent
// is back, nor does a log directory of a pod the runtime no longer holds.
func TestContainerGC(t *testing.T) {
	a := newAgentArgs(t, "", "--container-gc-period=2s")
	if err := a.WriteManifest("crash.yaml", crashingPod); err != nil {
		t.Fatal(err)
	}
	if err := a.WriteManifest("done.yaml", completedPod); err != nil {
		t.Fatal(err)
	}
	// Three instances (restarts after the 10 s and 20 s back-offs).
	crash, err := a.WaitPod("crash", 2*podTimeout, func(p *v1.Pod) bool {
		cs := p.Status.ContainerStatuses
		return len(cs) == 1 && cs[0].RestartCount >= 2
	})
	if err != nil {
		t.Fatal(err)
	}
	// The status reaches the API before the sync's GC of the pod runs
	// (and the periodic GC is 2 s): wait that long for the excess to go.
	dead := 0
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		dead = 0
		for _, c := range containersOf(t, string(crash.UID)) {
			if c.State != criv1.ContainerState_CONTAINER_RUNNING && c.State != criv1.ContainerState_CONTAINER_CREATED {
				dead++
			}
		}
		if dead <= 1 || time.Now().After(deadline) {
			break
		}
	}
	if dead > 1 {
		t.Errorf("%d dead instances of the restarting container, want at most 1 (MaxPerPodContainer)", dead)
	}
	crashLogs := nart.PodLogsDir(a.LogsDir, crash.Namespace, crash.Name, crash.UID)
	if first := filepath.Join(crashLogs, "c", "0.log"); !gone(first) {
		t.Errorf("%s kept: the removed container's log goes with it", first)
	}
	done, err := a.WaitPod("done", podTimeout, func(p *v1.Pod) bool { return p.Status.Phase == v1.PodSucceeded })
	if err != nil {
		t.Fatal(err)
	}
	// A terminated pod not deleted keeps its container, for its logs.
	if n := len(containersOf(t, string(done.UID))); n != 1 {
		t.Errorf("completed pod has %d containers, want its one dead container", n)
	}
	doneLogs := nart.PodLogsDir(a.LogsDir, done.Namespace, done.Name, done.UID)

	if err := a.Stop(); err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{"crash.yaml", "done.yaml"} {
		if err := a.RemoveManifest(m); err != nil {
			t.Fatal(err)
		}
	}
	// The logs of a pod whose runtime objects are gone already.
	ghost := nart.PodLogsDir(a.LogsDir, "default", "ghost", "0b2c9f3e-0000-4000-8000-00000000c0de")
	if err := os.MkdirAll(filepath.Join(ghost, "c"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ghost, "c", "0.log"), []byte("old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := a.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(podTimeout)
	for {
		left := map[string]bool{
			"crash's runtime objects": len(containersOf(t, string(crash.UID))) > 0 || sandboxCount(t, string(crash.UID)) > 0,
			"done's runtime objects":  len(containersOf(t, string(done.UID))) > 0 || sandboxCount(t, string(done.UID)) > 0,
			"crash's logs":            !gone(crashLogs),
			"done's logs":             !gone(doneLogs),
			"ghost's logs":            !gone(ghost),
		}
		var still []string
		for what, ok := range left {
			if ok {
				still = append(still, what)
			}
		}
		if len(still) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the restart, still there: %v", still)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
