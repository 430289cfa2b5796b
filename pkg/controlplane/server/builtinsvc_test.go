package server

import (
	"context"
	"errors"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

func TestBuiltinEndpointsPlan(t *testing.T) {
	c := Config{BindAddress: "192.0.2.4", SecurePort: 6443, DNSAddress: "192.0.2.4:53"}
	self := c.self()
	if self != (serverLease{APIIP: "192.0.2.4", DNSIP: "192.0.2.4"}) {
		t.Fatalf("self = %+v", self)
	}
	got := builtinEndpoints(c.SecurePort, []serverLease{self})
	if len(got) != 2 || got[0].name != "kubernetes" || !slices.Equal(got[0].ips, []string{"192.0.2.4"}) || got[0].ports[0].Port != 6443 ||
		got[1].name != "kube-dns" || got[1].namespace != "kube-system" || len(got[1].ports) != 2 {
		t.Fatalf("plan = %+v", got)
	}
	// Every live server, sorted; DNS only where a server serves it.
	got = builtinEndpoints(6443, []serverLease{{APIIP: "192.0.2.4"}, {APIIP: "192.0.2.5", DNSIP: "192.0.2.5"}, {APIIP: "192.0.2.6", DNSIP: "192.0.2.6"}})
	if len(got) != 2 || !slices.Equal(got[0].ips, []string{"192.0.2.4", "192.0.2.5", "192.0.2.6"}) || !slices.Equal(got[1].ips, []string{"192.0.2.5", "192.0.2.6"}) {
		t.Errorf("three servers: plan = %+v", got)
	}
	c.DNSAddress = "192.0.2.4:5353" // resolv.conf has no ports: pods cannot use it
	if got := builtinEndpoints(6443, []serverLease{c.self()}); len(got) != 1 {
		t.Errorf("DNS on another port: plan = %+v", got)
	}
	c.BindAddress = "127.0.0.1"
	if self := c.self(); self.APIIP != "" {
		t.Errorf("loopback API server: self = %+v", self)
	}
	if got := builtinEndpoints(6443, nil); len(got) != 0 {
		t.Errorf("no live server: plan = %+v, want none (the endpoints are never erased)", got)
	}
}

func TestEnsureBuiltinCreatesAndRepairs(t *testing.T) {
	ctx := context.Background()
	cs := fake.NewClientset()
	c := Config{BindAddress: "192.0.2.4", SecurePort: 6443, DNSAddress: "192.0.2.4:53"}
	b := builtinEndpoints(c.SecurePort, []serverLease{c.self()})[1]
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
	if err := ensureBuiltin(ctx, cs, builtinEndpoints(c.SecurePort, []serverLease{c.self()})[1]); !errors.Is(err, errNotOurs) {
		t.Fatalf("err = %v, want errNotOurs", err)
	}
	if _, err := cs.CoreV1().Endpoints("kube-system").Get(ctx, "kube-dns", metav1.GetOptions{}); err == nil {
		t.Error("endpoints written for a foreign kube-dns")
	}
}
