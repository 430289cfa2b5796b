package apiclient

import (
	"encoding/json"
	"strconv"
	"testing"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// apiLike makes the fake clientset's pod patches behave as the API
// server's: a resourceVersion or uid in the patch is a precondition
// (a conflict when it is not the stored one's), and every patch moves
// the resourceVersion on. The fake tracker does neither.
func apiLike(t *testing.T, cs *fake.Clientset) {
	gvr := v1.SchemeGroupVersion.WithResource("pods")
	cs.PrependReactor("patch", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		pa := a.(k8stesting.PatchAction)
		obj, err := cs.Tracker().Get(gvr, pa.GetNamespace(), pa.GetName())
		if err != nil {
			return true, nil, err
		}
		cur := obj.(*v1.Pod)
		var pre struct {
			Metadata struct {
				UID             k8stypes.UID `json:"uid"`
				ResourceVersion string       `json:"resourceVersion"`
			} `json:"metadata"`
		}
		if err := json.Unmarshal(pa.GetPatch(), &pre); err != nil {
			return true, nil, apierrors.NewBadRequest(err.Error())
		}
		if rv := pre.Metadata.ResourceVersion; rv != "" && rv != cur.ResourceVersion ||
			pre.Metadata.UID != "" && pre.Metadata.UID != cur.UID {
			return true, nil, apierrors.NewConflict(schema.GroupResource{Resource: "pods"}, cur.Name, nil)
		}
		data, _ := json.Marshal(cur)
		merged, err := strategicpatch.StrategicMergePatch(data, pa.GetPatch(), &v1.Pod{})
		if err != nil {
			return true, nil, apierrors.NewBadRequest(err.Error())
		}
		out := &v1.Pod{}
		if err := json.Unmarshal(merged, out); err != nil {
			t.Fatal(err)
		}
		n, _ := strconv.Atoi(cur.ResourceVersion)
		out.ResourceVersion = strconv.Itoa(n + 1)
		if err := cs.Tracker().Update(gvr, out, out.Namespace); err != nil {
			return true, nil, err
		}
		return true, out.DeepCopy(), nil
	})
}

// bump writes pod as someone else would: a new resourceVersion.
func bump(t *testing.T, cs *fake.Clientset, p *v1.Pod) {
	t.Helper()
	gvr := v1.SchemeGroupVersion.WithResource("pods")
	obj, err := cs.Tracker().Get(gvr, p.Namespace, p.Name)
	if err != nil {
		t.Fatal(err)
	}
	n, _ := strconv.Atoi(obj.(*v1.Pod).ResourceVersion)
	p = p.DeepCopy()
	p.ResourceVersion = strconv.Itoa(n + 1)
	if err := cs.Tracker().Update(gvr, p, p.Namespace); err != nil {
		t.Fatal(err)
	}
}

func withRV(p *v1.Pod, rv string) *v1.Pod {
	p = p.DeepCopy()
	p.ResourceVersion = rv
	return p
}

// The patch is the kubelet's: only what changed, conditions merged by
// type (with their order), uid as a precondition; plus the base's
// resourceVersion, since the base may be stale.
func TestStatusPatchContents(t *testing.T) {
	base := withRV(apiPod("web", "u1", v1.PodPending), "7")
	base.Status.Conditions = []v1.PodCondition{{Type: v1.PodScheduled, Status: v1.ConditionTrue}, {Type: "example.com/gate", Status: v1.ConditionTrue}}
	st, ok := mergeStatus(base.Status, running())
	if !ok {
		t.Fatal("merge refused")
	}
	patch, unchanged, err := statusPatch(base, st)
	if err != nil || unchanged {
		t.Fatalf("unchanged %v, err %v", unchanged, err)
	}
	want := `{"metadata":{"resourceVersion":"7","uid":"u1"},"status":{` +
		`"$setElementOrder/conditions":[{"type":"Ready"},{"type":"PodScheduled"},{"type":"example.com/gate"}],` +
		`"conditions":[{"lastProbeTime":null,"lastTransitionTime":null,"status":"True","type":"Ready"}],` +
		`"containerStatuses":[{"image":"","imageID":"","lastState":{},"name":"c","ready":true,"restartCount":0,"state":{"running":{"startedAt":null}}}],` +
		`"phase":"Running","podIP":"10.88.0.7"}}`
	if string(patch) != want {
		t.Errorf("patch\n%s\nwant\n%s", patch, want)
	}
	// Nothing to change: only the preconditions, which is no patch.
	if _, unchanged, err := statusPatch(base, base.Status); err != nil || !unchanged {
		t.Errorf("same status: unchanged %v, err %v", unchanged, err)
	}
}

// The pod the worker was given (from the agent's watch) is the base of
// the first patch, and the answer of each patch the base of the next: no
// GET.
func TestStatusPatchesWithoutReading(t *testing.T) {
	p := withRV(apiPod("web", "u1", v1.PodPending), "3")
	s, cs := newTestStatus(t, p)
	apiLike(t, cs)
	pending := v1.PodStatus{Phase: v1.PodPending, Conditions: []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionFalse}}}
	s.OnStatus(fromAPI(p), pending)
	drain(s)
	s.OnStatus(fromAPI(p), running())
	drain(s)
	if n := countActions(cs, "get", "pods", ""); n != 0 {
		t.Errorf("%d reads, want none", n)
	}
	if n := countActions(cs, "patch", "pods", "status"); n != 2 {
		t.Errorf("%d patches, want 2", n)
	}
	got := getPod(t, cs, "web")
	if got.Status.Phase != v1.PodRunning || got.ResourceVersion != "5" {
		t.Errorf("phase %s, resourceVersion %s; want Running, 5", got.Status.Phase, got.ResourceVersion)
	}
}

// A stale base (someone wrote the pod after the watch's copy) is a
// conflict; the manager then reads the pod and merges against the API's
// conditions.
func TestStatusStaleBaseReadsAgain(t *testing.T) {
	p := withRV(apiPod("web", "u1", v1.PodPending), "3")
	s, cs := newTestStatus(t, p)
	apiLike(t, cs)
	newer := p.DeepCopy()
	newer.Status.Conditions = []v1.PodCondition{{Type: "example.com/gate", Status: v1.ConditionTrue}}
	bump(t, cs, newer)
	s.OnStatus(fromAPI(p), running())
	drain(s)
	if n := countActions(cs, "get", "pods", ""); n != 1 {
		t.Errorf("%d reads, want 1 (after the conflict)", n)
	}
	got := getPod(t, cs, "web")
	conds := map[v1.PodConditionType]v1.ConditionStatus{}
	for _, c := range got.Status.Conditions {
		conds[c.Type] = c.Status
	}
	if got.Status.Phase != v1.PodRunning || conds[v1.PodReady] != v1.ConditionTrue || conds["example.com/gate"] != v1.ConditionTrue {
		t.Errorf("status = %+v", got.Status)
	}
}

// A pod someone else finished after the watch's copy is never moved back:
// the stale base conflicts, and the copy read then is terminal.
func TestStatusStaleBaseNeverMovesTerminalPodBack(t *testing.T) {
	p := withRV(apiPod("job", "u1", v1.PodRunning), "3")
	s, cs := newTestStatus(t, p)
	apiLike(t, cs)
	failed := p.DeepCopy()
	failed.Status.Phase, failed.Status.Reason = v1.PodFailed, "Evicted"
	bump(t, cs, failed)
	s.OnStatus(fromAPI(p), running())
	drain(s)
	if got := getPod(t, cs, "job"); got.Status.Phase != v1.PodFailed || got.Status.Reason != "Evicted" {
		t.Errorf("status = %s %s, want Failed Evicted kept", got.Status.Phase, got.Status.Reason)
	}
	if n := countActions(cs, "patch", "pods", "status"); n != 1 {
		t.Errorf("%d patches, want only the one that conflicted", n)
	}
}

// Another pod of the same name: the uid precondition fails and nothing
// is written to it.
func TestStatusPatchSkipsPodOfSameName(t *testing.T) {
	old := withRV(apiPod("web", "old-uid", v1.PodPending), "3")
	s, cs := newTestStatus(t, withRV(apiPod("web", "new-uid", v1.PodPending), "3"))
	apiLike(t, cs)
	s.OnStatus(fromAPI(old), running())
	drain(s)
	if got := getPod(t, cs, "web"); got.Status.Phase != v1.PodPending {
		t.Fatalf("status of the old pod written to the new one: %s", got.Status.Phase)
	}
	if len(s.pending) != 0 || s.queue.Len() != 0 {
		t.Errorf("pending %d, queued %d: a replaced pod is not retried", len(s.pending), s.queue.Len())
	}
}

// Once the worker is gone the manager forgets its copy of the pod.
func TestStatusForgetsTerminatedPod(t *testing.T) {
	p := withRV(apiPod("web", "u1", v1.PodPending), "3")
	s, cs := newTestStatus(t, p)
	apiLike(t, cs)
	s.OnStatus(fromAPI(p), running())
	drain(s)
	if s.known[p.UID] == nil {
		t.Fatal("no copy kept after the patch")
	}
	s.OnTerminated(fromAPI(p))
	drain(s)
	if len(s.known) != 0 || len(s.pending) != 0 {
		t.Errorf("known %d, pending %d after the pod's worker ended", len(s.known), len(s.pending))
	}
}
