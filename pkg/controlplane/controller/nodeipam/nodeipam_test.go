package nodeipam

import (
	"context"
	"fmt"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"

	"github.com/nodeagent/nodeagent/pkg/controlplane/controller/internal/ctrltest"
)

func node(name, cidr string) *v1.Node {
	n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name)}}
	if cidr != "" {
		n.Spec.PodCIDR, n.Spec.PodCIDRs = cidr, []string{cidr}
	}
	return n
}

// TestAllocationScenario: a two-block range; the block of an existing node
// is kept, a new node gets the other one, a third waits with a
// CIDRNotAvailable event until a node is deleted.
func TestAllocationScenario(t *testing.T) {
	client := ctrltest.NewClientset(node("old", "10.10.1.0/24"), node("new", ""))
	f := informers.NewSharedInformerFactory(client, 0)
	c, err := New(client, f, Config{ClusterCIDR: "10.10.0.0/23", NodeCIDRMaskSize: 24}, ctrltest.Logger(t))
	if err != nil {
		t.Fatal(err)
	}
	ctrltest.Start(t, f, c.Run)

	cidrs := func(ctx context.Context, name string) string {
		n, err := client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err.Error()
		}
		return fmt.Sprintf("%s %v", n.Spec.PodCIDR, n.Spec.PodCIDRs)
	}
	ctrltest.Eventually(t, "new node gets the free block", func(ctx context.Context) (bool, string) {
		got := cidrs(ctx, "new")
		return got == "10.10.0.0/24 [10.10.0.0/24]", got
	})
	if got := cidrs(t.Context(), "old"); got != "10.10.1.0/24 [10.10.1.0/24]" {
		t.Errorf("existing node's CIDR changed: %s", got)
	}

	if _, err := client.CoreV1().Nodes().Create(t.Context(), node("third", ""), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	want := "Node third Warning CIDRNotAvailable: Node third status is now: CIDRNotAvailable [cidrAllocator]"
	ctrltest.Eventually(t, "exhausted range reported", func(ctx context.Context) (bool, string) {
		ev := ctrltest.Events(ctx, client, "default")
		return slices.Contains(ev, want), fmt.Sprint(ev)
	})

	if err := client.CoreV1().Nodes().Delete(t.Context(), "old", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	ctrltest.Eventually(t, "released block goes to the waiting node", func(ctx context.Context) (bool, string) {
		got := cidrs(ctx, "third")
		return got == "10.10.1.0/24 [10.10.1.0/24]", got
	})
}

func TestNewRejectsInvalidConfig(t *testing.T) {
	client := ctrltest.NewClientset()
	f := informers.NewSharedInformerFactory(client, 0)
	if _, err := New(client, f, Config{ClusterCIDR: "10.0.0.0/24", NodeCIDRMaskSize: 16}, ctrltest.Logger(t)); err == nil {
		t.Fatal("New accepted a node mask shorter than the cluster prefix")
	}
}
