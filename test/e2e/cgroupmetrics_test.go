package e2e

import (
	"testing"

	"github.com/nodeagent/nodeagent/test/framework"
)

// TestCgroupManagerDurationMetric: the agent's /metrics carries
// kubelet_cgroup_manager_duration_seconds for the node cgroups set up at
// start and the pod cgroup made for a pod (create), and for its removal
// (destroy) once the pod is gone.
func TestCgroupManagerDurationMetric(t *testing.T) {
	a := newAgentWith(t, `authentication: {anonymous: {enabled: true}, webhook: {enabled: false}}
authorization: {mode: AlwaysAllow}
`)
	count := func(op string) uint64 {
		fams := scrapeMetrics(t, a)
		f := fams["kubelet_cgroup_manager_duration_seconds"]
		if f == nil {
			t.Fatalf("no kubelet_cgroup_manager_duration_seconds on /metrics")
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "operation_type" && l.GetValue() == op {
					return m.GetHistogram().GetSampleCount()
				}
			}
		}
		return 0
	}
	if err := a.WaitLog("serving the node API", podTimeout); err != nil {
		t.Fatal(err)
	}
	createdAtStart := count("create") // kubepods and the QoS tiers, new for this instance's cgroup root or not
	if err := a.WriteManifest("cg.yaml", imagePod("cg", framework.BusyboxImage, "IfNotPresent")); err != nil {
		t.Fatal(err)
	}
	if _, err := a.WaitPod("cg", podTimeout, running); err != nil {
		t.Fatal(err)
	}
	if n := count("create"); n <= createdAtStart {
		t.Errorf("create observations %d after the pod started, %d before: the pod cgroup's creation is not counted", n, createdAtStart)
	}
	if err := a.RemoveManifest("cg.yaml"); err != nil {
		t.Fatal(err)
	}
	if err := a.WaitGone("cg", podTimeout); err != nil {
		t.Fatal(err)
	}
	waitRuntimeEmpty(t, podTimeout)
	if n := count("destroy"); n == 0 {
		t.Errorf("no destroy observed after the pod was removed")
	}
}
