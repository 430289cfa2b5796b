package e2e

import (
	"testing"

	"github.com/nodeagent/nodeagent/test/framework"
)

// The runtime goes away under the agent and comes back: running pods are
// untouched, the outage is logged, and work queued meanwhile is done.
func TestRuntimeOutageIsSurvived(t *testing.T) {
	a := newAgent(t)
	if err := a.WriteManifest("steady.yaml", imagePod("steady", framework.BusyboxImage, "IfNotPresent")); err != nil {
		t.Fatal(err)
	}
	before, err := a.WaitPod("steady", podTimeout, running)
	if err != nil {
		t.Fatal(err)
	}
	if err := ctrd.KillDaemon(); err != nil {
		t.Fatal(err)
	}
	restarted := false
	defer func() {
		if !restarted {
			if err := ctrd.Restart(); err != nil {
				t.Error(err)
			}
		}
	}()
	if err := a.WaitLog("PLEG relist failed", podTimeout); err != nil {
		t.Error(err)
	}
	// A pod added during the outage waits for the runtime.
	if err := a.WriteManifest("late.yaml", imagePod("late", framework.BusyboxImage, "IfNotPresent")); err != nil {
		t.Fatal(err)
	}
	if err := a.WaitLog("read pod status from runtime", podTimeout); err != nil {
		t.Error(err)
	}
	if err := ctrd.Restart(); err != nil {
		t.Fatal(err)
	}
	restarted = true
	if _, err := a.WaitPod("late", podTimeout, running); err != nil {
		t.Fatal(err)
	}
	after, err := a.WaitPod("steady", podTimeout, running)
	if err != nil {
		t.Fatal(err)
	}
	if containerIDs(after)["c"] != containerIDs(before)["c"] || after.Status.ContainerStatuses[0].RestartCount != 0 {
		t.Errorf("the running pod was restarted by the outage: %v -> %v", containerIDs(before), containerIDs(after))
	}
}
