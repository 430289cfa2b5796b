package apiclient

import (
	"context"
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// The watch follows labels and taints set through the API; before it has
// the Node, and when asked for a fresh copy, the API server answers.
func TestNodeWatchFollowsLabelsAndTaints(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cs := fake.NewClientset()
	w, err := NewNodeWatch(cs, "node-a")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Node(ctx, false); err == nil {
		t.Fatal("Node() of an unregistered node: no error")
	}
	nodes := cs.CoreV1().Nodes()
	created, err := nodes.Create(ctx, &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if n, err := w.Node(ctx, false); err != nil || n.Name != "node-a" {
		t.Fatalf("Node() before the watch runs = %v, %v; want the API server's", n, err)
	}
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()

	created.Labels = map[string]string{"disk": "ssd"}
	created.Spec.Taints = []v1.Taint{{Key: "maintenance", Effect: v1.TaintEffectNoExecute}}
	if _, err := nodes.Update(ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		n, err := w.Node(ctx, false)
		if err == nil && n.Labels["disk"] == "ssd" && len(n.Spec.Taints) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("watch did not see the update: %v, %v", n, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	reads := countActions(cs, "get", "nodes", "")
	if _, err := w.Node(ctx, true); err != nil {
		t.Fatal(err)
	}
	if got := countActions(cs, "get", "nodes", ""); got != reads+1 {
		t.Errorf("fresh Node() made %d API reads, want 1", got-reads)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run: %v", err)
	}
}

// Taints to register with are set on a Node the agent creates, and left
// alone on an existing one, as the kubelet does.
func TestRegisterWithTaints(t *testing.T) {
	taint := v1.Taint{Key: "dedicated", Value: "db", Effect: v1.TaintEffectNoExecute}
	for _, existing := range []bool{false, true} {
		t.Run(fmt.Sprintf("existing=%v", existing), func(t *testing.T) {
			rt := &fakeRuntime{}
			rt.set(true, true, nil)
			n, cs := newTestNode(t, rt, newClock())
			n.cfg.Taints = []v1.Taint{taint}
			if existing {
				old := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}}
				if _, err := cs.CoreV1().Nodes().Create(context.Background(), old, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			if err := n.register(context.Background()); err != nil {
				t.Fatal(err)
			}
			got := getNode(t, cs).Spec.Taints
			if existing && len(got) != 0 {
				t.Errorf("taints of an existing node changed: %v", got)
			}
			if !existing && (len(got) != 1 || got[0] != taint) {
				t.Errorf("taints = %v, want [%v]", got, taint)
			}
		})
	}
}
