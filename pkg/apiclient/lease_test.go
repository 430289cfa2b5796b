package apiclient

import (
	"context"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

func TestLeaseCreateAndRenew(t *testing.T) {
	ctx := context.Background()
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a", UID: "node-uid"}}
	cs := fake.NewClientset(node)
	clock := newClock()
	l, err := NewLease(LeaseConfig{Client: cs, NodeName: "node-a", Logger: discard, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.renew(ctx); err != nil {
		t.Fatal(err)
	}
	get := func() (holder string, secs int32, renew time.Time, owners []metav1.OwnerReference) {
		lease, err := cs.CoordinationV1().Leases(LeaseNamespace).Get(ctx, "node-a", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return *lease.Spec.HolderIdentity, *lease.Spec.LeaseDurationSeconds, lease.Spec.RenewTime.Time, lease.OwnerReferences
	}
	holder, secs, first, owners := get()
	if holder != "node-a" || secs != 40 {
		t.Errorf("holder %q duration %d, want node-a 40", holder, secs)
	}
	if len(owners) != 1 || owners[0].Kind != "Node" || owners[0].Name != "node-a" || owners[0].UID != "node-uid" || owners[0].APIVersion != "v1" {
		t.Errorf("owner references = %+v", owners)
	}
	clock.Step(10 * time.Second)
	if err := l.renew(ctx); err != nil {
		t.Fatal(err)
	}
	_, _, second, owners := get()
	if !second.After(first) || second.Sub(first) != 10*time.Second {
		t.Errorf("renewTime %v -> %v, want +10s", first, second)
	}
	if len(owners) != 1 {
		t.Errorf("owner references = %+v", owners)
	}
	if n := countActions(cs, "create", "leases", ""); n != 1 {
		t.Errorf("%d lease creates, want 1", n)
	}
}

func TestLeaseBeforeNodeThenOwner(t *testing.T) {
	ctx := context.Background()
	cs := fake.NewClientset()
	l, _ := NewLease(LeaseConfig{Client: cs, NodeName: "node-a", Logger: discard})
	if err := l.renew(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Nodes().Create(ctx, &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a", UID: "u1"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := l.renew(ctx); err != nil {
		t.Fatal(err)
	}
	lease, _ := cs.CoordinationV1().Leases(LeaseNamespace).Get(ctx, "node-a", metav1.GetOptions{})
	if len(lease.OwnerReferences) != 1 || lease.OwnerReferences[0].UID != "u1" {
		t.Errorf("owner reference not added once the node exists: %+v", lease.OwnerReferences)
	}
}
