package apiclient

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/nodeagent/nodeagent/pkg/podutil"
)

func apiPod(name string, uid string, phase v1.PodPhase) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: k8stypes.UID(uid)},
		Spec:       v1.PodSpec{NodeName: "node-a", Containers: []v1.Container{{Name: "c", Image: "busybox"}}},
		Status:     v1.PodStatus{Phase: phase},
	}
}

// fromAPI is the pod as the source passes it to the manager.
func fromAPI(p *v1.Pod) *v1.Pod {
	p = p.DeepCopy()
	p.Annotations = map[string]string{podutil.ConfigSourceAnnotation: podutil.SourceAPI}
	return p
}

func newTestStatus(t *testing.T, objs ...runtime.Object) (*StatusManager, *fake.Clientset) {
	t.Helper()
	cs := fake.NewClientset(objs...)
	s, err := NewStatusManager(StatusConfig{Client: cs, Logger: discard})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.queue.ShutDown)
	return s, cs
}

// drain processes what is queued now, synchronously.
func drain(s *StatusManager) {
	for s.queue.Len() > 0 {
		uid, _ := s.queue.Get()
		s.process(context.Background(), uid)
		s.queue.Done(uid)
	}
}

func getPod(t *testing.T, cs *fake.Clientset, name string) *v1.Pod {
	t.Helper()
	p, err := cs.CoreV1().Pods("default").Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func running() v1.PodStatus {
	return v1.PodStatus{Phase: v1.PodRunning, PodIP: "10.88.0.7", Conditions: []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue}},
		ContainerStatuses: []v1.ContainerStatus{{Name: "c", Ready: true, State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}}}}
}

func TestStatusUpdateKeepsForeignConditions(t *testing.T) {
	p := apiPod("web", "u1", v1.PodPending)
	p.Status.Conditions = []v1.PodCondition{{Type: v1.PodScheduled, Status: v1.ConditionTrue}, {Type: "example.com/gate", Status: v1.ConditionTrue}}
	s, cs := newTestStatus(t, p)
	s.OnStatus(fromAPI(p), running())
	drain(s)
	got := getPod(t, cs, "web")
	if got.Status.Phase != v1.PodRunning || got.Status.PodIP != "10.88.0.7" || len(got.Status.ContainerStatuses) != 1 {
		t.Fatalf("status = %+v", got.Status)
	}
	types := map[v1.PodConditionType]bool{}
	for _, c := range got.Status.Conditions {
		types[c.Type] = true
	}
	if !types[v1.PodReady] || !types[v1.PodScheduled] || !types["example.com/gate"] {
		t.Errorf("conditions = %+v", got.Status.Conditions)
	}
}

// A foreign condition in the agent's report (a copy of what the API said
// when the agent last saw the pod) never overwrites the API's newer one.
func TestStatusUpdateTakesForeignConditionsFromAPI(t *testing.T) {
	p := apiPod("web", "u1", v1.PodRunning)
	p.Status.Conditions = []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionFalse}, {Type: "example.com/gate", Status: v1.ConditionTrue}}
	s, cs := newTestStatus(t, p)
	st := running()
	st.Conditions = append(st.Conditions, v1.PodCondition{Type: "example.com/gate", Status: v1.ConditionFalse})
	s.OnStatus(fromAPI(p), st)
	drain(s)
	got := map[v1.PodConditionType]v1.ConditionStatus{}
	for _, c := range getPod(t, cs, "web").Status.Conditions {
		if _, dup := got[c.Type]; dup {
			t.Errorf("condition %s twice", c.Type)
		}
		got[c.Type] = c.Status
	}
	if got[v1.PodReady] != v1.ConditionTrue || got["example.com/gate"] != v1.ConditionTrue {
		t.Errorf("conditions = %v, want Ready from the report and the gate from the API", got)
	}
}

// The kubelet's own DisruptionTarget (a pod it preempted) reaches the API
// with the move to a terminal phase, as upstream's mergePodStatus sends
// it; afterwards the API's copy stands.
func TestStatusSendsKubeletDisruptionTargetWhenTerminal(t *testing.T) {
	p := apiPod("web", "u1", v1.PodRunning)
	s, cs := newTestStatus(t, p)
	preempted := v1.PodCondition{Type: v1.DisruptionTarget, Status: v1.ConditionTrue, Reason: v1.PodReasonTerminationByKubelet,
		Message: "Pod was preempted by Kubelet to accommodate a critical pod."}
	st := v1.PodStatus{Phase: v1.PodFailed, Reason: "Preempting", Message: "Preempted in order to admit critical pod",
		Conditions: []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionFalse}, preempted}}
	s.OnStatus(fromAPI(p), st)
	drain(s)
	find := func() *v1.PodCondition {
		for _, c := range getPod(t, cs, "web").Status.Conditions {
			if c.Type == v1.DisruptionTarget {
				return &c
			}
		}
		return nil
	}
	if c := find(); c == nil || c.Reason != v1.PodReasonTerminationByKubelet || c.Message != preempted.Message {
		t.Fatalf("DisruptionTarget = %+v", c)
	}
	// Once terminal, a report's copy no longer overwrites the API's.
	st.Conditions[1].Message = "changed"
	s.OnStatus(fromAPI(getPod(t, cs, "web")), st)
	drain(s)
	if c := find(); c == nil || c.Message != preempted.Message {
		t.Errorf("DisruptionTarget after = %+v", c)
	}
}

func TestStatusNeverMovesTerminalPodBack(t *testing.T) {
	p := apiPod("job", "u1", v1.PodSucceeded)
	s, cs := newTestStatus(t, p)
	s.OnStatus(fromAPI(p), running())
	drain(s)
	if got := getPod(t, cs, "job"); got.Status.Phase != v1.PodSucceeded {
		t.Fatalf("phase = %s, want Succeeded kept", got.Status.Phase)
	}
	if n := countActions(cs, "patch", "pods", "status"); n != 0 {
		t.Errorf("%d status patches, want none", n)
	}
	// Terminal to terminal is fine.
	s.OnStatus(fromAPI(p), v1.PodStatus{Phase: v1.PodFailed, Reason: "Evicted"})
	drain(s)
	if got := getPod(t, cs, "job"); got.Status.Phase != v1.PodFailed {
		t.Fatalf("phase = %s, want Failed", got.Status.Phase)
	}
}

func TestStatusRetriesOnConflict(t *testing.T) {
	p := apiPod("web", "u1", v1.PodPending)
	s, cs := newTestStatus(t, p)
	conflicts := 2
	cs.PrependReactor("patch", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() == "status" && conflicts > 0 {
			conflicts--
			return true, nil, apierrors.NewConflict(schema.GroupResource{Resource: "pods"}, "web", nil)
		}
		return false, nil, nil
	})
	s.OnStatus(fromAPI(p), running())
	drain(s)
	if n := countActions(cs, "patch", "pods", "status"); n != 3 {
		t.Errorf("%d status patches, want 3 (2 conflicts, 1 success)", n)
	}
	if n := countActions(cs, "get", "pods", ""); n != 3 {
		t.Errorf("%d reads, want 3 (no copy known, then one after each conflict)", n)
	}
	if got := getPod(t, cs, "web"); got.Status.Phase != v1.PodRunning {
		t.Fatalf("phase = %s after conflicts", got.Status.Phase)
	}
}

func TestStatusSkipsReplacedPod(t *testing.T) {
	p := apiPod("web", "new-uid", v1.PodPending)
	s, cs := newTestStatus(t, p)
	s.OnStatus(fromAPI(apiPod("web", "old-uid", v1.PodPending)), running())
	drain(s)
	if got := getPod(t, cs, "web"); got.Status.Phase != v1.PodPending {
		t.Fatalf("status of the old pod written to the new one: %s", got.Status.Phase)
	}
}

func TestDeletionConfirmed(t *testing.T) {
	p := apiPod("web", "u1", v1.PodRunning)
	now := metav1.Now()
	p.DeletionTimestamp = &now
	s, cs := newTestStatus(t, p)
	final := v1.PodStatus{Phase: v1.PodRunning, ContainerStatuses: []v1.ContainerStatus{{Name: "c", State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 137}}}}}
	s.OnStatus(fromAPI(p), final)
	s.OnTerminated(fromAPI(p))
	drain(s)
	if _, err := cs.CoreV1().Pods("default").Get(context.Background(), "web", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("pod not deleted: %v", err)
	}
	var sawStatus bool
	for _, a := range cs.Actions() {
		if a.GetVerb() == "patch" && a.GetSubresource() == "status" {
			sawStatus = true
		}
		if d, ok := a.(k8stesting.DeleteAction); ok {
			o := d.GetDeleteOptions()
			if !sawStatus {
				t.Error("deleted before the final status was sent")
			}
			if o.GracePeriodSeconds == nil || *o.GracePeriodSeconds != 0 || o.Preconditions == nil || *o.Preconditions.UID != "u1" {
				t.Errorf("delete options = %+v", o)
			}
		}
	}
	// Already gone: NotFound is fine and nothing is retried.
	s.OnTerminated(fromAPI(p))
	drain(s)
	if s.queue.Len() != 0 || len(s.pending) != 0 {
		t.Errorf("queue %d, pending %d after NotFound", s.queue.Len(), len(s.pending))
	}
}

func TestTerminatedWithoutDeletionKeepsPod(t *testing.T) {
	p := apiPod("web", "u1", v1.PodRunning)
	s, cs := newTestStatus(t, p)
	s.OnTerminated(fromAPI(p))
	static := staticPod("etcd", "h1")
	s.OnTerminated(static)
	drain(s)
	getPod(t, cs, "web")
	if n := countActions(cs, "delete", "pods", ""); n != 0 {
		t.Errorf("%d deletes, want 0", n)
	}
}

func TestStaticPodStatusGoesToMirror(t *testing.T) {
	sp := staticPod("etcd", "h1")
	s, cs := newTestStatus(t, &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a", UID: "n1"}})
	s.OnStatus(sp, running())
	drain(s) // no mirror yet: waits (rate-limited retry)
	if len(s.pending) != 1 {
		t.Fatalf("status dropped while the mirror pod is missing")
	}
	m, _ := NewMirrorManager(MirrorConfig{Client: cs, NodeName: "node-a", Logger: discard})
	m.Update([]*v1.Pod{sp}, nil)
	if err := m.reconcile(context.Background()); err != nil {
		t.Fatal(err)
	}
	s.process(context.Background(), sp.UID)
	if got := getPod(t, cs, sp.Name); got.Status.Phase != v1.PodRunning {
		t.Fatalf("mirror status = %+v", got.Status)
	}
}
