package podworker

import (
	"context"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	critest "k8s.io/cri-api/pkg/apis/testing"
)

// tornDown records the pods whose volumes were torn down.
type tornDown struct {
	flakyVolumes
	mu   sync.Mutex
	uids []types.UID
}

func (v *tornDown) TearDownPod(uid types.UID) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.uids = append(v.uids, uid)
	return nil
}

// An evicted pod is Failed with reason Evicted, the message and the
// DisruptionTarget condition, after a Warning Evicted event; it leaves
// the active pods, and the wait ends once it is stopped and its volumes
// are torn down.
func TestManagerEvictsPod(t *testing.T) {
	h := newManager(t, critest.NewFakeRuntimeService(), critest.NewFakeImageService())
	ev := &recordedEvents{}
	h.m.events = ev
	vols := &tornDown{}
	h.m.cfg.Volumes = vols
	h.start(t)
	pod := staticPod("filler", nil)
	pod.Annotations = nil // an API pod
	h.pods <- []*v1.Pod{pod}
	eventually(t, "running", func() (bool, string) { return allRunning(h.pod(pod.UID)) })
	if got := h.m.ActivePods(); len(got) != 1 {
		t.Fatalf("active pods %d, want 1", len(got))
	}
	const msg = "The node was low on resource: memory. Threshold quantity: 100Mi, available: 50Mi. "
	cond := &v1.PodCondition{Type: v1.DisruptionTarget, Status: v1.ConditionTrue, Reason: v1.PodReasonTerminationByKubelet, Message: msg}
	stopped, ok := h.m.Evict(pod.UID, Eviction{Message: msg, Condition: cond, GracePeriodSeconds: 1})
	if !ok {
		t.Fatal("no worker")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := WaitEvicted(ctx, stopped); err != nil {
		t.Fatal(err)
	}
	p := waitPhase(t, h, pod.UID, v1.PodFailed)
	if p.Status.Reason != "Evicted" || p.Status.Message != msg {
		t.Errorf("status %s %q", p.Status.Reason, p.Status.Message)
	}
	found := false
	for _, c := range p.Status.Conditions {
		if c.Type == v1.DisruptionTarget && c.Status == v1.ConditionTrue && c.Reason == "TerminationByKubelet" && c.Message == msg {
			found = true
		}
	}
	if !found {
		t.Errorf("no DisruptionTarget condition: %+v", p.Status.Conditions)
	}
	ev.mu.Lock()
	if n := count(ev.reasons, "Evicted"); n != 1 {
		t.Errorf("Evicted events %d: %v", n, ev.reasons)
	}
	ev.mu.Unlock()
	vols.mu.Lock()
	if len(vols.uids) != 1 || vols.uids[0] != pod.UID {
		t.Errorf("volumes torn down for %v", vols.uids)
	}
	vols.mu.Unlock()
	if got := h.m.ActivePods(); len(got) != 0 {
		t.Errorf("evicted pod still active")
	}
	// Its dead containers and sandbox go at the next collection, without
	// disk pressure, as upstream's (ShouldPodContentBeRemoved: evicted).
	if err := h.m.GarbageCollect(ctx, false); err != nil {
		t.Fatal(err)
	}
	if sbs, cs := h.runtimeObjects(); len(cs) != 0 || len(sbs) != 0 {
		t.Errorf("evicted pod: left %v %v, want nothing", sbs, cs)
	}
}

func TestStopGrace(t *testing.T) {
	pod := staticPod("p", nil)
	thirty := int64(30)
	pod.Spec.TerminationGracePeriodSeconds = &thirty
	w := &worker{}
	if g := w.stopGrace(pod); g != 30 {
		t.Errorf("no override: %d", g)
	}
	one := int64(1)
	w.graceOverride = &one
	if g := w.stopGrace(pod); g != minGracePeriod {
		t.Errorf("hard eviction: %d, want the minimum %d", g, minGracePeriod)
	}
}

// Under memory pressure BestEffort pods are refused, others admitted,
// as the kubelet's eviction admit handler.
func TestAdmissionUnderPressure(t *testing.T) {
	h := newManager(t, critest.NewFakeRuntimeService(), critest.NewFakeImageService())
	h.m.cfg.Pressure = func() []v1.NodeConditionType { return []v1.NodeConditionType{v1.NodeMemoryPressure} }
	h.start(t)
	best := scenarioPod("besteffort", "busybox:1")
	burst := scenarioPod("burstable", "busybox:1")
	burst.Spec.Containers[0].Resources.Requests = v1.ResourceList{v1.ResourceMemory: resource.MustParse("10Mi")}
	h.pods <- []*v1.Pod{best, burst}
	p := waitPhase(t, h, best.UID, v1.PodFailed)
	if p.Status.Reason != "Evicted" || p.Status.Message != "Pod was rejected: The node had condition: [MemoryPressure]. " {
		t.Errorf("besteffort %s %q", p.Status.Reason, p.Status.Message)
	}
	eventually(t, "burstable running", func() (bool, string) { return allRunning(h.pod(burst.UID)) })
}

// The eviction manager's DeleteAllUnusedContainers removes every dead
// container and sandbox of an evicted (finished) pod, and leaves a
// running pod alone.
func TestCollectAllGarbage(t *testing.T) {
	h := newManager(t, critest.NewFakeRuntimeService(), critest.NewFakeImageService())
	h.start(t)
	gone, kept := staticPod("gone", nil), staticPod("kept", nil)
	gone.Annotations, kept.Annotations = nil, nil
	h.pods <- []*v1.Pod{gone, kept}
	eventually(t, "both running", func() (bool, string) {
		if ok, d := allRunning(h.pod(gone.UID)); !ok {
			return false, d
		}
		return allRunning(h.pod(kept.UID))
	})
	stopped, _ := h.m.Evict(gone.UID, Eviction{Message: "evicted", GracePeriodSeconds: 1})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := WaitEvicted(ctx, stopped); err != nil {
		t.Fatal(err)
	}
	if err := h.m.CollectAllGarbage(ctx); err != nil {
		t.Fatal(err)
	}
	sandboxes, containers := h.runtimeObjects()
	if len(sandboxes) != 1 || len(containers) != 1 {
		t.Errorf("left %v %v, want only the running pod's", sandboxes, containers)
	}
	if ok, d := allRunning(h.pod(kept.UID)); !ok {
		t.Errorf("kept: %s", d)
	}
}
