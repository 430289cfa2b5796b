package podworker

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	criv1 "k8s.io/cri-api/pkg/apis/runtime/v1"
	critest "k8s.io/cri-api/pkg/apis/testing"

	"github.com/nodeagent/nodeagent/pkg/runtime"
)

// A pod deleted through the API is stopped, its final status published,
// and OnTerminated called exactly once, even while the API still lists it.
func TestDeletedPodIsStoppedAndConfirmedOnce(t *testing.T) {
	var mu sync.Mutex
	var statuses []v1.PodPhase
	terminated := 0
	h := newManager(t, critest.NewFakeRuntimeService(), critest.NewFakeImageService())
	h.m.cfg.OnStatus = func(_ *v1.Pod, s v1.PodStatus) {
		mu.Lock()
		statuses = append(statuses, s.Phase)
		mu.Unlock()
	}
	h.m.cfg.OnTerminated = func(*v1.Pod) {
		mu.Lock()
		terminated++
		mu.Unlock()
	}
	h.img.SetFakeImages([]string{"busybox:1"})
	h.start(t)
	pod := scenarioPod("api", "busybox:1")
	h.pods <- []*v1.Pod{pod}
	eventually(t, "pod running", func() (bool, string) {
		p := h.pod(pod.UID)
		return p != nil && p.Status.Phase == v1.PodRunning, fmt.Sprint(p)
	})
	deleted := pod.DeepCopy()
	now := metav1.Now()
	grace := int64(2)
	deleted.DeletionTimestamp, deleted.DeletionGracePeriodSeconds = &now, &grace
	h.pods <- []*v1.Pod{deleted}
	eventually(t, "OnTerminated", func() (bool, string) {
		mu.Lock()
		defer mu.Unlock()
		return terminated == 1, fmt.Sprint(terminated)
	})
	// The API still lists the pod until the deletion is confirmed: it must
	// not be started or stopped again.
	h.pods <- []*v1.Pod{deleted}
	h.pods <- []*v1.Pod{deleted}
	if n := count(h.rt.GetCalls(), "RunPodSandbox"); n != 1 {
		t.Errorf("RunPodSandbox called %d times, want 1", n)
	}
	mu.Lock()
	defer mu.Unlock()
	if terminated != 1 {
		t.Errorf("OnTerminated called %d times, want 1", terminated)
	}
	if len(statuses) == 0 || statuses[0] != v1.PodPending && statuses[0] != v1.PodRunning {
		t.Errorf("statuses %v", statuses)
	}
}

// Until every pod source has reported, runtime pods the agent does not
// know are left alone: they may be pods of the source not heard from yet.
func TestHousekeepingWaitsForAllSources(t *testing.T) {
	rt := critest.NewFakeRuntimeService()
	ctx := context.Background()
	unknown := scenarioPod("from-api", "busybox:1")
	sbCfg := &criv1.PodSandboxConfig{
		Metadata: &criv1.PodSandboxMetadata{Name: unknown.Name, Namespace: "default", Uid: string(unknown.UID)},
		Labels:   runtime.SandboxLabels(unknown),
	}
	if _, err := rt.RunPodSandbox(ctx, sbCfg, ""); err != nil {
		t.Fatal(err)
	}
	var ready atomic.Bool
	h := newManager(t, rt, critest.NewFakeImageService())
	h.m.cfg.SourcesReady = ready.Load
	h.start(t)
	h.pods <- nil // the first set triggers housekeeping, which must hold off
	h.pods <- nil // processed after the first: its housekeeping has run
	if n := count(rt.GetCalls(), "StopPodSandbox"); n != 0 {
		t.Fatalf("an unknown pod was stopped before every source reported (%d calls)", n)
	}
	ready.Store(true)
	h.m.housekeeping(ctx)
	eventually(t, "unknown pod removed once sources are ready", func() (bool, string) {
		sbs, _ := h.runtimeObjects()
		return len(sbs) == 0, fmt.Sprint(sbs)
	})
}
