package network

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/knftables"
)

// syncBuffer is a log sink the test reads while kubenet writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// kubenetHarness is a Kubenet whose routes and bridge live in a network
// namespace of the test's own, over a fake clientset and a fake nftables.
type kubenetHarness struct {
	k       *Kubenet
	ns      int
	client  *fake.Clientset
	nft     *knftables.Fake
	log     *syncBuffer
	changes int // OnChange calls (sync runs on the test's goroutine)
}

func newKubenetHarness(t *testing.T, nodes ...*v1.Node) *kubenetHarness {
	t.Helper()
	requirePlugins(t, "bridge", "host-local", "portmap")
	h := &kubenetHarness{log: &syncBuffer{}, nft: knftables.NewFake(knftables.IPv4Family, MasqueradeTable)}
	h.ns = newNetns(t)
	// The other nodes' gateways are on a link of the namespace; cni0 is
	// the pod bridge the configuration names, with a pod's gateway on it.
	ip(t, h.ns, "link", "add", "v0", "type", "veth", "peer", "name", "v1")
	ip(t, h.ns, "link", "set", "v0", "up")
	ip(t, h.ns, "addr", "add", "192.168.0.1/24", "dev", "v0")
	ip(t, h.ns, "link", "add", DefaultBridge, "type", "bridge")
	ip(t, h.ns, "addr", "add", "10.244.0.1/24", "dev", DefaultBridge)

	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	routes, err := NewRoutes(RoutesConfig{NetNS: h.ns, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = routes.Close() })
	var objs []runtime.Object
	for _, n := range nodes {
		objs = append(objs, n)
	}
	h.client = fake.NewClientset(objs...)
	h.k, err = NewKubenet(KubenetConfig{
		Client: h.client, NodeName: "a", Writer: newTestWriter(t, t.TempDir(), systemPluginDir), Routes: routes,
		ClusterCIDRs: []string{"10.244.0.0/16"}, Masquerade: &Masquerade{nft: h.nft},
		Logger:   slog.New(slog.NewTextHandler(h.log, nil)),
		OnChange: func() { h.changes++ },
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() { cancel(); h.k.factory.Shutdown() })
	h.k.factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), h.k.informerSynced) {
		t.Fatal("node informer not synced")
	}
	return h
}

// sync runs one sync in the test's namespace (ClearBridgeAddresses works
// in the calling thread's).
func (h *kubenetHarness) sync(t *testing.T) {
	t.Helper()
	if err := inNetns(h.ns, func() error { h.k.sync(context.Background()); return nil }); err != nil {
		t.Fatal(err)
	}
}

// update writes n and waits until the informer has passed it on: its
// event kicks kubenet after the lister has it (an earlier kick may be
// pending).
func (h *kubenetHarness) update(t *testing.T, n *v1.Node) {
	t.Helper()
	if _, err := h.client.CoreV1().Nodes().Update(context.Background(), n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	timeout := time.After(10 * time.Second)
	for {
		select {
		case <-h.k.kick:
		case <-timeout:
			t.Fatal("the Node update did not trigger a sync")
		}
		if got, err := h.k.nodes.Get(n.Name); err == nil && !planInputsChanged(got, n) {
			return
		}
	}
}

func (h *kubenetHarness) wantCondition(t *testing.T, status v1.ConditionStatus, inMessage string) {
	t.Helper()
	c, ok := h.k.Condition()
	if !ok || c.Type != v1.NodeNetworkUnavailable || c.Status != status || !strings.Contains(c.Message, inMessage) {
		t.Errorf("Condition() = %+v, %v; want NetworkUnavailable=%s with a message holding %q", c, ok, status, inMessage)
	}
}

// TestKubenetSync follows a node from registration without a pod CIDR to
// a working network, with another node claiming more than its share.
func TestKubenetSync(t *testing.T) {
	self := node("a", nil, "192.168.0.1")
	hijacker := node("h", []string{"0.0.0.0/1"}, "192.168.0.3")
	h := newKubenetHarness(t, self, node("b", []string{"10.244.1.0/24"}, "192.168.0.2"), hijacker)

	// Before the first sync there is nothing to report: an agent that
	// restarts leaves the condition as it was.
	if c, ok := h.k.Condition(); ok {
		t.Fatalf("Condition() before the first sync = %+v, true; want none", c)
	}

	// No pod CIDR yet (registered again, IPAM to come): the condition
	// says so, and the bridge keeps its address.
	h.sync(t)
	h.wantCondition(t, v1.ConditionTrue, MessageWaitingForPodCIDR)
	if h.changes != 1 {
		t.Errorf("OnChange called %d times after the first sync; want 1", h.changes)
	}
	if out := ip(t, h.ns, "-4", "addr", "show", "dev", DefaultBridge); !strings.Contains(out, "10.244.0.1/24") {
		t.Errorf("%s lost its address while the node has no pod CIDR:\n%s", DefaultBridge, out)
	}
	wantRoutesIn(t, h.ns, RouteProtocol, "10.244.1.0/24 via 192.168.0.2")

	// The refused claim is logged once, not at every resync.
	h.sync(t)
	if n := strings.Count(h.log.String(), "0.0.0.0/1 of node h"); n != 1 {
		t.Errorf("refused claim logged %d times over two syncs; want 1:\n%s", n, h.log)
	}

	// The pod CIDR arrives: the network is ready, the stale gateway goes,
	// the masquerade exemptions are the planned CIDRs only.
	ip(t, h.ns, "addr", "add", "10.244.9.1/24", "dev", DefaultBridge)
	self.Spec.PodCIDR, self.Spec.PodCIDRs = "10.244.0.0/24", []string{"10.244.0.0/24"}
	h.update(t, self)
	h.sync(t)
	h.wantCondition(t, v1.ConditionFalse, "configured")
	if h.changes != 2 {
		t.Errorf("OnChange called %d times after becoming ready; want 2", h.changes)
	}
	out := ip(t, h.ns, "-4", "addr", "show", "dev", DefaultBridge)
	if strings.Contains(out, "10.244.9.1") || !strings.Contains(out, "10.244.0.1/24") {
		t.Errorf("%s after the pod CIDR came:\n%s", DefaultBridge, out)
	}
	dump := h.nft.Dump()
	if !strings.Contains(dump, "add element ip nodeagent-kubenet pod-cidrs { 10.244.1.0/24 }") || strings.Contains(dump, "0.0.0.0/1") {
		t.Errorf("masquerade exemptions:\n%s", dump)
	}

	// Another claim: logged as it changes.
	hijacker.Spec.PodCIDR, hijacker.Spec.PodCIDRs = "10.99.0.1/32", []string{"10.99.0.1/32"}
	h.update(t, hijacker)
	h.sync(t)
	if !strings.Contains(h.log.String(), "10.99.0.1/32 of node h: prefix /32 is longer than /30") {
		t.Errorf("changed refusal not logged:\n%s", h.log)
	}
	wantRoutesIn(t, h.ns, RouteProtocol, "10.244.1.0/24 via 192.168.0.2")
}
