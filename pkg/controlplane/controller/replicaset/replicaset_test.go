package replicaset

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	k8stesting "k8s.io/client-go/testing"

	"github.com/nodeagent/nodeagent/pkg/controlplane/controller/internal/ctrltest"
)

func TestSlowStartBatch(t *testing.T) {
	var calls atomic.Int32
	ok, err := slowStartBatch(10, 1, func() error { calls.Add(1); return nil })
	if ok != 10 || err != nil || calls.Load() != 10 {
		t.Fatalf("all succeed: ok=%d err=%v calls=%d", ok, err, calls.Load())
	}
	// Batches of 1, 2, 4: the third fails, so 3 succeed and 7 calls are made.
	calls.Store(0)
	ok, err = slowStartBatch(10, 1, func() error {
		if calls.Add(1) > 3 {
			return fmt.Errorf("quota")
		}
		return nil
	})
	if ok != 3 || err == nil || calls.Load() != 7 {
		t.Fatalf("third batch fails: ok=%d err=%v calls=%d, want 3, an error, 7", ok, err, calls.Load())
	}
}

func TestRankedPodsOrder(t *testing.T) {
	now := time.Now()
	ready := []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue, LastTransitionTime: metav1.NewTime(now.Add(-time.Hour))}}
	pod := func(name, node string, phase v1.PodPhase, conds []v1.PodCondition) *v1.Pod {
		return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(now.Add(-2 * time.Hour))},
			Spec: v1.PodSpec{NodeName: node}, Status: v1.PodStatus{Phase: phase, Conditions: conds}}
	}
	pods := []*v1.Pod{
		pod("running-ready", "n1", v1.PodRunning, ready),
		pod("running-notready", "n1", v1.PodRunning, nil),
		pod("pending", "n1", v1.PodPending, nil),
		pod("unscheduled", "", v1.PodPending, nil),
	}
	r := rankedPods{pods: pods, rank: make([]int, len(pods)), now: metav1.NewTime(now)}
	for i := range r.rank {
		r.rank[i] = 1
	}
	want := []string{"unscheduled", "pending", "running-notready", "running-ready"}
	for i := range want {
		for j := range want {
			if got := r.Less(3-i, 3-j); got != (i < j) {
				t.Errorf("Less(%s, %s) = %v", pods[3-i].Name, pods[3-j].Name, got)
			}
		}
	}
}

// TestReplicaSetScenario: adopt a matching orphan, create the rest, report
// status, then scale down keeping the ready pod.
func TestReplicaSetScenario(t *testing.T) {
	replicas := int32(3)
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "rs-uid", Generation: 1},
		Spec: appsv1.ReplicaSetSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: v1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec:       v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "nginx"}}},
			},
		},
	}
	orphan := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "orphan", Namespace: "default", UID: "orphan-uid", Labels: map[string]string{"app": "web"}},
		Spec:       v1.PodSpec{NodeName: "n1"},
		Status: v1.PodStatus{Phase: v1.PodRunning, Conditions: []v1.PodCondition{
			{Type: v1.PodReady, Status: v1.ConditionTrue, LastTransitionTime: metav1.NewTime(time.Now().Add(-time.Minute))}}},
	}
	other := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "other", Namespace: "default", Labels: map[string]string{"app": "db"}}}
	client := ctrltest.NewClientset(rs, orphan, other)
	f := informers.NewSharedInformerFactory(client, 0)
	c := New(client, f, ctrltest.Logger(t))
	ctrltest.Start(t, f, func(ctx context.Context) error { return c.Run(ctx, 2) })

	pods := func(ctx context.Context) []v1.Pod {
		l, err := client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
		if err != nil {
			t.Fatal(err)
		}
		return l.Items
	}
	ctrltest.Eventually(t, "3 owned pods", func(ctx context.Context) (bool, string) {
		ps := pods(ctx)
		owned := 0
		for _, p := range ps {
			if ref := metav1.GetControllerOf(&p); ref != nil && ref.UID == rs.UID && *ref.BlockOwnerDeletion {
				owned++
			}
		}
		return len(ps) == 3 && owned == 3, fmt.Sprintf("%d pods, %d owned", len(ps), owned)
	})
	var created []string
	for _, p := range pods(t.Context()) {
		if p.Name != "orphan" && p.GenerateName != "web-" {
			t.Errorf("pod %s has generateName %q, want web-", p.Name, p.GenerateName)
		}
		if p.Name != "orphan" {
			created = append(created, p.Name)
		}
	}
	ctrltest.Eventually(t, "SuccessfulCreate events", func(ctx context.Context) (bool, string) {
		ev := ctrltest.Events(ctx, client, "default")
		for _, name := range created {
			if !slices.Contains(ev, "ReplicaSet web Normal SuccessfulCreate: Created pod: "+name+" [replicaset-controller]") {
				return false, fmt.Sprint(ev)
			}
		}
		return true, ""
	})
	ctrltest.Eventually(t, "status", func(ctx context.Context) (bool, string) {
		cur, _ := client.AppsV1().ReplicaSets("default").Get(ctx, "web", metav1.GetOptions{})
		st := cur.Status
		return st.Replicas == 3 && st.FullyLabeledReplicas == 3 && st.ReadyReplicas == 1 && st.AvailableReplicas == 1 &&
			st.ObservedGeneration == 1, fmt.Sprintf("%+v", st)
	})

	// Scale down: the unscheduled, pending pods go first.
	cur, _ := client.AppsV1().ReplicaSets("default").Get(t.Context(), "web", metav1.GetOptions{})
	one := int32(1)
	cur.Spec.Replicas = &one
	if _, err := client.AppsV1().ReplicaSets("default").Update(t.Context(), cur, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	ctrltest.Eventually(t, "scaled to the ready pod", func(ctx context.Context) (bool, string) {
		ps := pods(ctx)
		return len(ps) == 1 && ps[0].Name == "orphan", fmt.Sprintf("%d pods", len(ps))
	})
	ctrltest.Eventually(t, "SuccessfulDelete events", func(ctx context.Context) (bool, string) {
		ev := ctrltest.Events(ctx, client, "default")
		for _, name := range created {
			if !slices.Contains(ev, "ReplicaSet web Normal SuccessfulDelete: Deleted pod: "+name+" [replicaset-controller]") {
				return false, fmt.Sprint(ev)
			}
		}
		return true, ""
	})

	// A pod whose labels stop matching is released.
	p, _ := client.CoreV1().Pods("default").Get(t.Context(), "orphan", metav1.GetOptions{})
	p.Labels = map[string]string{"app": "debug"}
	if _, err := client.CoreV1().Pods("default").Update(t.Context(), p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	ctrltest.Eventually(t, "released and replaced", func(ctx context.Context) (bool, string) {
		rel, _ := client.CoreV1().Pods("default").Get(ctx, "orphan", metav1.GetOptions{})
		return len(rel.OwnerReferences) == 0 && len(pods(ctx)) == 1, fmt.Sprintf("owners %v, %d pods", rel.OwnerReferences, len(pods(ctx)))
	})
}

// TestFailedCreate: a rejected pod creation is a FailedCreate warning on
// the ReplicaSet and its ReplicaFailure condition.
func TestFailedCreate(t *testing.T) {
	replicas := int32(1)
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "rs-uid", Generation: 1},
		Spec: appsv1.ReplicaSetSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: v1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}}},
		},
	}
	client := ctrltest.NewClientset(rs)
	client.PrependReactor("create", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(v1.Resource("pods"), "", fmt.Errorf("exceeded quota"))
	})
	f := informers.NewSharedInformerFactory(client, 0)
	c := New(client, f, ctrltest.Logger(t))
	ctrltest.Start(t, f, func(ctx context.Context) error { return c.Run(ctx, 1) })
	want := "ReplicaSet web Warning FailedCreate: Error creating: pods is forbidden: exceeded quota [replicaset-controller]"
	ctrltest.Eventually(t, "FailedCreate event and condition", func(ctx context.Context) (bool, string) {
		ev := ctrltest.Events(ctx, client, "default")
		cur, _ := client.AppsV1().ReplicaSets("default").Get(ctx, "web", metav1.GetOptions{})
		var cond string
		for _, c := range cur.Status.Conditions {
			if c.Type == appsv1.ReplicaSetReplicaFailure {
				cond = c.Reason + ": " + c.Message
			}
		}
		return slices.Contains(ev, want) && cond == "FailedCreate: pods is forbidden: exceeded quota", fmt.Sprintf("events %q condition %q", ev, cond)
	})
}
