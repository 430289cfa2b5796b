package podworker

import (
	"context"
	"fmt"
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	criv1 "k8s.io/cri-api/pkg/apis/runtime/v1"
	critest "k8s.io/cri-api/pkg/apis/testing"

	"github.com/nodeagent/nodeagent/pkg/runtime"
)

// podReads records, in order, the runtime reads of one pod (a list
// filtered by its UID) and the sandboxes made.
type podReads struct {
	*critest.FakeRuntimeService
	mu  sync.Mutex
	log []string
}

func (r *podReads) note(s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.log = append(r.log, s)
}

func (r *podReads) calls() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.log...)
}

func (r *podReads) ListPodSandbox(ctx context.Context, f *criv1.PodSandboxFilter) ([]*criv1.PodSandbox, error) {
	if uid := f.GetLabelSelector()[runtime.LabelPodUID]; uid != "" {
		r.note("read " + uid)
	}
	return r.FakeRuntimeService.ListPodSandbox(ctx, f)
}

func (r *podReads) RunPodSandbox(ctx context.Context, cfg *criv1.PodSandboxConfig, handler string) (string, error) {
	r.note("sandbox " + cfg.GetMetadata().GetUid())
	return r.FakeRuntimeService.RunPodSandbox(ctx, cfg, handler)
}

// A pod the runtime never held starts without a runtime read: its first
// sync's status is empty, as the kubelet's pod cache gives for a pod the
// PLEG never saw. Later syncs read the runtime.
func TestNewPodsFirstSyncDoesNotReadTheRuntime(t *testing.T) {
	rt := &podReads{FakeRuntimeService: critest.NewFakeRuntimeService()}
	h := newManager(t, rt.FakeRuntimeService, critest.NewFakeImageService())
	h.m.cfg.Runtime = rt
	h.start(t)
	pod := scenarioPod("fresh", "busybox:1")
	h.pods <- []*v1.Pod{pod}
	eventually(t, "pod running", func() (bool, string) { return allRunning(h.pod(pod.UID)) })
	got := rt.calls()
	if len(got) < 2 || got[0] != "sandbox uid-fresh" || got[1] != "read uid-fresh" {
		t.Errorf("calls %v, want the sandbox made before the first read", got)
	}
}

// A pod whose sandbox the runtime holds when the agent starts (it ran
// before a restart) is found by the relist at start: its first sync reads
// the runtime and adopts the sandbox instead of making a second one.
func TestRelistAtStartFindsRunningPods(t *testing.T) {
	rt := &podReads{FakeRuntimeService: critest.NewFakeRuntimeService()}
	pod := scenarioPod("adopted", "busybox:1")
	cfg := &criv1.PodSandboxConfig{
		Metadata: &criv1.PodSandboxMetadata{Name: pod.Name, Namespace: pod.Namespace, Uid: string(pod.UID)},
		Labels:   runtime.SandboxLabels(pod),
	}
	if _, err := rt.FakeRuntimeService.RunPodSandbox(context.Background(), cfg, ""); err != nil {
		t.Fatal(err)
	}
	h := newManager(t, rt.FakeRuntimeService, critest.NewFakeImageService())
	h.m.cfg.Runtime = rt
	h.start(t)
	h.pods <- []*v1.Pod{pod}
	eventually(t, "pod running", func() (bool, string) { return allRunning(h.pod(pod.UID)) })
	got := rt.calls()
	if len(got) == 0 || got[0] != "read uid-adopted" {
		t.Errorf("calls %v, want a read first", got)
	}
	if sbs, _ := h.runtimeObjects(); len(sbs) != 1 {
		t.Errorf("sandboxes %v, want only the one it had", sbs)
	}
}

func TestRuntimeUIDs(t *testing.T) {
	listed := map[types.UID]runtime.PodRef{"ran": {UID: "ran"}}
	workers := map[types.UID]*worker{"starting": nil}
	known := runtimeUIDs(listed, workers)
	cases := []struct {
		known map[types.UID]bool
		uid   types.UID
		want  bool
	}{
		{known, "ran", false},      // found by the relist: read it
		{known, "starting", false}, // has a worker: may have a sandbox
		{known, "new", true},
		{nil, "new", false}, // no relist succeeded: read every pod
	}
	for _, tc := range cases {
		if got := neverInRuntime(tc.known, tc.uid); got != tc.want {
			t.Errorf("neverInRuntime(%v, %s) = %v, want %v", tc.known, tc.uid, got, tc.want)
		}
	}
	if fmt.Sprint(known) != "map[ran:true starting:true]" {
		t.Errorf("runtimeUIDs = %v", known)
	}
}

// The API source sends every pod of the node on each change: a pod the
// set brings again unchanged (the same resourceVersion) is neither copied
// nor compared again, while a new resourceVersion reaches its worker.
func TestUnchangedAPIPodsAreNotCopiedAgain(t *testing.T) {
	h := startManager(t)
	a, b := scenarioPod("a", "busybox:1"), scenarioPod("b", "busybox:1")
	a.ResourceVersion, b.ResourceVersion = "10", "11"
	h.pods <- []*v1.Pod{a, b}
	eventually(t, "pods running", func() (bool, string) {
		ok, detail := allRunning(h.pod(a.UID))
		if !ok {
			return ok, detail
		}
		return allRunning(h.pod(b.UID))
	})
	h.m.mu.Lock()
	keptA, keptB := h.m.desired[a.UID], h.m.desired[b.UID]
	h.m.mu.Unlock()

	b2 := b.DeepCopy()
	b2.ResourceVersion = "12"
	b2.Labels = map[string]string{"tier": "web"}
	h.pods <- []*v1.Pod{a.DeepCopy(), b2}
	h.pods <- []*v1.Pod{a.DeepCopy(), b2.DeepCopy()} // Run has handled the set before once this is taken
	h.m.mu.Lock()
	gotA, gotB := h.m.desired[a.UID], h.m.desired[b.UID]
	h.m.mu.Unlock()
	if gotA != keptA {
		t.Error("unchanged pod a was copied again")
	}
	if gotB == keptB || gotB.Labels["tier"] != "web" {
		t.Errorf("pod b's new version did not replace the old: %v", gotB.Labels)
	}
	h.m.mu.Lock()
	w := h.m.workers[b.UID]
	h.m.mu.Unlock()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.pod.ResourceVersion != "12" {
		t.Errorf("b's worker has resourceVersion %q", w.pod.ResourceVersion)
	}
}
