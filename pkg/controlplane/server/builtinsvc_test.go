package server

import (
	"context"
	"errors"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

func TestBuiltinEndpointsPlan(t *testing.T) {
	c := Config{BindAddress: "192.0.2.4", SecurePort: 6443, DNSAddress: "192.0.2.4:53"}
	got := c.builtinEndpoints()
	if len(got) != 2 || got[0].name != "kubernetes" || got[0].ip != "192.0.2.4" || got[0].ports[0].Port != 6443 ||
		got[1].name != "kube-dns" || got[1].namespace != "kube-system" || len(got[1].ports) != 2 {
		t.Fatalf("plan = %+v", got)
	}
	c.DNSAddress = "192.0.2.4:5353" // resolv.conf has no ports: pods cannot use it
	if got := c.builtinEndpoints(); len(got) != 1 {
		t.Errorf("DNS on another port: plan = %+v", got)
	}
	c.BindAddress = "127.0.0.1"
	if got := c.builtinEndpoints(); len(got) != 0 {
		t.Errorf("loopback API server: plan = %+v", got)
	}
}

func TestEnsureBuiltinCreatesAndRepairs(t *testing.T) {
	ctx := context.Background()
	cs := fake.NewClientset()
	c := Config{BindAddress: "192.0.2.4", SecurePort: 6443, DNSAddress: "192.0.2.4:53"}
	b := c.builtinEndpoints()[1]
	if err := ensureBuiltin(ctx, cs, b); err != nil {
		t.Fatal(err)
	}
	svc, err := cs.CoreV1().Services("kube-system").Get(ctx, "kube-dns", metav1.GetOptions{})
	if err != nil || svc.Spec.ClusterIP != KubeDNSServiceIP || svc.Spec.Selector != nil {
		t.Fatalf("kube-dns service = %+v, %v", svc, err)
	}
	sl, err := cs.DiscoveryV1().EndpointSlices("kube-system").Get(ctx, "kube-dns", metav1.GetOptions{})
	if err != nil || sl.Labels["kubernetes.io/service-name"] != "kube-dns" || sl.Endpoints[0].Addresses[0] != "192.0.2.4" || len(sl.Ports) != 2 {
		t.Fatalf("slice = %+v, %v", sl, err)
	}
	// Someone changes the endpoints: the next round puts them back.
	ep, _ := cs.CoreV1().Endpoints("kube-system").Get(ctx, "kube-dns", metav1.GetOptions{})
	ep.Subsets[0].Addresses = []v1.EndpointAddress{{IP: "203.0.113.9"}}
	if _, err := cs.CoreV1().Endpoints("kube-system").Update(ctx, ep, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := ensureBuiltin(ctx, cs, b); err != nil {
		t.Fatal(err)
	}
	ep, _ = cs.CoreV1().Endpoints("kube-system").Get(ctx, "kube-dns", metav1.GetOptions{})
	if ep.Subsets[0].Addresses[0].IP != "192.0.2.4" {
		t.Errorf("endpoints not repaired: %+v", ep.Subsets)
	}
}

// A kube-dns someone else runs (CoreDNS with a selector) is left alone.
func TestEnsureBuiltinLeavesForeignDNS(t *testing.T) {
	ctx := context.Background()
	foreign := kubeDNSService()
	foreign.Spec.Selector = map[string]string{"k8s-app": "kube-dns"}
	cs := fake.NewClientset(foreign)
	c := Config{BindAddress: "192.0.2.4", SecurePort: 6443, DNSAddress: "192.0.2.4:53"}
	if err := ensureBuiltin(ctx, cs, c.builtinEndpoints()[1]); !errors.Is(err, errNotOurs) {
		t.Fatalf("err = %v, want errNotOurs", err)
	}
	if _, err := cs.CoreV1().Endpoints("kube-system").Get(ctx, "kube-dns", metav1.GetOptions{}); err == nil {
		t.Error("endpoints written for a foreign kube-dns")
	}
}
