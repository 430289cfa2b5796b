package api

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/nodeagent/nodeagent/pkg/podsource"
	"github.com/nodeagent/nodeagent/pkg/podutil"
)

var discard = slog.New(slog.NewTextHandler(io.Discard, nil))

func boundPod(name, uid string, phase v1.PodPhase) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID(uid)},
		Spec:   v1.PodSpec{NodeName: "node-a", Containers: []v1.Container{{Name: "c", Image: "busybox"}}},
		Status: v1.PodStatus{Phase: phase}}
}

// names lists pods in failure messages.
func names(pods []*v1.Pod) []string {
	out := make([]string, len(pods))
	for i, p := range pods {
		out[i] = p.Name
	}
	return out
}

func TestSourceSnapshots(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	mirror := boundPod("etcd-node-a", "m1", v1.PodRunning)
	mirror.Annotations = map[string]string{podutil.ConfigMirrorAnnotation: "h"}
	cs := fake.NewClientset(boundPod("web", "u1", v1.PodPending), mirror)
	src, err := New(Config{Client: cs, NodeName: "node-a", Logger: discard})
	if err != nil {
		t.Fatal(err)
	}
	out := make(chan podsource.APIPods)
	done := make(chan error, 1)
	go func() { done <- src.Run(ctx, out) }()
	next := func() podsource.APIPods {
		select {
		case s := <-out:
			return s
		case <-time.After(10 * time.Second):
			t.Fatal("no snapshot")
			return podsource.APIPods{}
		}
	}
	s := next()
	if len(s.Pods) != 1 || s.Pods[0].Name != "web" || s.Pods[0].Annotations[podutil.ConfigSourceAnnotation] != podutil.SourceAPI {
		t.Fatalf("pods = %v", names(s.Pods))
	}
	if len(s.Mirrors) != 1 || s.Mirrors[0].Name != "etcd-node-a" {
		t.Fatalf("mirrors = %v", names(s.Mirrors))
	}
	for _, a := range cs.Actions() {
		if l, ok := a.(interface {
			GetListRestrictions() k8stesting.ListRestrictions
		}); ok {
			if f := l.GetListRestrictions().Fields.String(); f != "spec.nodeName=node-a" {
				t.Errorf("list field selector = %q", f)
			}
		}
	}
	now := metav1.Now()
	del := boundPod("web", "u1", v1.PodRunning)
	del.DeletionTimestamp = &now
	if _, err := cs.CoreV1().Pods("default").Update(ctx, del, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	for s = next(); len(s.Pods) == 1 && s.Pods[0].DeletionTimestamp == nil; s = next() {
	}
	if len(s.Pods) != 1 || s.Pods[0].DeletionTimestamp == nil {
		t.Fatalf("deleted pod not passed on: %v", names(s.Pods))
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestSnapshotReusesUnchangedCopies(t *testing.T) {
	src, err := New(Config{Client: fake.NewClientset(), NodeName: "node-a", Logger: discard})
	if err != nil {
		t.Fatal(err)
	}
	store := src.informer.GetStore()
	a, b := boundPod("a", "u1", v1.PodPending), boundPod("b", "u2", v1.PodPending)
	a.ResourceVersion, b.ResourceVersion = "10", "11"
	static := boundPod("s", "u3", v1.PodPending) // no resourceVersion: always copied
	for _, p := range []*v1.Pod{a, b, static} {
		if err := store.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	first := src.snapshot()
	b2 := b.DeepCopy()
	b2.ResourceVersion, b2.Labels = "12", map[string]string{"x": "y"}
	if err := store.Update(b2); err != nil {
		t.Fatal(err)
	}
	second := src.snapshot()
	if len(second.Pods) != 3 {
		t.Fatalf("pods = %v", names(second.Pods))
	}
	if second.Pods[0] != first.Pods[0] {
		t.Error("unchanged pod a was copied again")
	}
	if second.Pods[1] == first.Pods[1] || second.Pods[1].Labels["x"] != "y" || second.Pods[1].ResourceVersion != "12" {
		t.Errorf("changed pod b not copied anew: %+v", second.Pods[1].ObjectMeta)
	}
	if second.Pods[2] == first.Pods[2] {
		t.Error("a pod without resourceVersion was reused")
	}
	for _, p := range second.Pods {
		if p.Annotations[podutil.ConfigSourceAnnotation] != podutil.SourceAPI {
			t.Errorf("pod %s lacks the API source annotation", p.Name)
		}
		if p == a || p == b2 {
			t.Errorf("pod %s is the informer's own object", p.Name)
		}
	}
	if err := store.Delete(a); err != nil {
		t.Fatal(err)
	}
	src.snapshot()
	if _, kept := src.copies["u1"]; kept {
		t.Error("the copy of a deleted pod is kept")
	}
}
