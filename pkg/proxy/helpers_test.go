package proxy

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	testingclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/knftables"
)

// waitTimeout only guards against a hung test; no test asserts how long
// anything took.
const waitTimeout = 30 * time.Second

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// recordingNFT wraps an Interface and keeps the text of every transaction
// it ran, so that tests see what a sync sent, not only the result.
type recordingNFT struct {
	knftables.Interface
	// oldKernel, with the fake that Interface is, makes Run refuse as
	// Linux before 6.2 does (EBUSY) to delete a chain that something in
	// the table pointed to when the transaction began: there, map
	// elements deleted by a transaction release their chains only after
	// it. Stricter than the kernel (which releases rules' jumps and gotos
	// at once), so that no sync relies on in-transaction release.
	oldKernel *knftables.Fake
	mu        sync.Mutex
	txs       []string
	// fail, when set, makes the next Run fail without applying.
	fail error
	// onRun, when set, is called by every Run, as if nft took time.
	onRun func()
}

func (r *recordingNFT) Run(ctx context.Context, tx *knftables.Transaction) error {
	r.mu.Lock()
	r.txs = append(r.txs, tx.String())
	fail := r.fail
	r.fail = nil
	onRun := r.onRun
	r.mu.Unlock()
	if onRun != nil {
		onRun()
	}
	if fail != nil {
		return fail
	}
	if r.oldKernel != nil {
		if err := checkChainDeletions(r.oldKernel, tx.String()); err != nil {
			return err
		}
	}
	return r.Interface.Run(ctx, tx)
}

// checkChainDeletions fails if a "delete chain" of tx names a chain that
// a rule or map element of fake's table points to.
func checkChainDeletions(fake *knftables.Fake, tx string) error {
	fake.RLock()
	defer fake.RUnlock()
	if fake.Table == nil {
		return nil
	}
	for _, line := range strings.Split(tx, "\n") {
		name, ok := strings.CutPrefix(line, "delete chain ip "+TableName+" ")
		if !ok {
			continue
		}
		if by := referrer(fake.Table, name); by != "" {
			return fmt.Errorf("delete chain %s: device or resource busy (referenced by %s when the transaction began)", name, by)
		}
	}
	return nil
}

// referrer names a rule or element of table that jumps or goes to chain,
// or is "".
func referrer(table *knftables.FakeTable, chain string) string {
	names := func(text string) bool {
		words := strings.Fields(text)
		for i := 1; i < len(words); i++ {
			if (words[i-1] == "goto" || words[i-1] == "jump") && words[i] == chain {
				return true
			}
		}
		return false
	}
	for cname, c := range table.Chains {
		for _, r := range c.Rules {
			if names(r.Rule) {
				return "a rule of " + cname
			}
		}
	}
	for mname, m := range table.Maps {
		for _, e := range m.Elements {
			if names(strings.Join(e.Value, " ")) {
				return "an element of " + mname
			}
		}
	}
	return ""
}

func (r *recordingNFT) last() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.txs) == 0 {
		return ""
	}
	return r.txs[len(r.txs)-1]
}

func (r *recordingNFT) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.txs)
}

// fakeConntrack records what the Proxier asks to delete.
type fakeConntrack struct {
	mu    sync.Mutex
	calls [][]FlowFilter
	err   error
}

func (f *fakeConntrack) ClearFlows(_ context.Context, filters []FlowFilter) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, filters)
	return len(filters), f.err
}

// take returns the calls so far and forgets them.
func (f *fakeConntrack) take() [][]FlowFilter {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.calls
	f.calls = nil
	return c
}

// newTestClock is a fake clock at a fixed time.
func newTestClock() *testingclock.FakeClock {
	return testingclock.NewFakeClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
}

// newFakeProxier is a Proxier on knftables' fake, wrapped for recording
// and with old kernels' rule for deleting chains. Its conntrack is a
// fakeConntrack unless cfg has one: unit tests never touch the host's.
func newFakeProxier(t *testing.T, cfg Config) (*Proxier, *knftables.Fake, *recordingNFT) {
	t.Helper()
	fake := knftables.NewFake(knftables.IPv4Family, TableName)
	rec := &recordingNFT{Interface: fake, oldKernel: fake}
	cfg.NFT = rec
	if cfg.Logger == nil {
		cfg.Logger = discardLogger()
	}
	if cfg.Conntrack == nil {
		cfg.Conntrack = &fakeConntrack{}
	}
	p, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return p, fake, rec
}

// svcOpt changes a test service.
type svcOpt func(*v1.Service)

// service is a ClusterIP service with one port per "name:port" (name may
// be empty), targeting the same port.
func service(ns, name, clusterIP string, ports []v1.ServicePort, opts ...svcOpt) *v1.Service {
	s := &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1.ServiceSpec{
			Type:      v1.ServiceTypeClusterIP,
			ClusterIP: clusterIP,
			Ports:     ports,
			Selector:  map[string]string{"app": name},
		},
	}
	if clusterIP != "" && clusterIP != v1.ClusterIPNone {
		s.Spec.ClusterIPs = []string{clusterIP}
	}
	for _, o := range opts {
		o(s)
	}
	return s
}

func tcpPort(name string, port int32) v1.ServicePort {
	return v1.ServicePort{Name: name, Port: port, Protocol: v1.ProtocolTCP, TargetPort: intstr.FromInt32(port)}
}

func withNodePort(port int32) svcOpt {
	return func(s *v1.Service) {
		s.Spec.Type = v1.ServiceTypeNodePort
		s.Spec.Ports[0].NodePort = port
	}
}

func withAffinity(timeout *int32) svcOpt {
	return func(s *v1.Service) {
		s.Spec.SessionAffinity = v1.ServiceAffinityClientIP
		if timeout != nil {
			s.Spec.SessionAffinityConfig = &v1.SessionAffinityConfig{
				ClientIP: &v1.ClientIPConfig{TimeoutSeconds: timeout},
			}
		}
	}
}

// ep is an endpoint of a slice; conditions are given as "ready",
// "serving", "terminating" words (absent words are false; no words at all
// leaves every condition nil).
func ep(ip string, conds ...string) discoveryv1.Endpoint {
	e := discoveryv1.Endpoint{Addresses: []string{ip}}
	if len(conds) == 0 {
		return e
	}
	has := func(w string) *bool {
		for _, c := range conds {
			if c == w {
				return ptr.To(true)
			}
		}
		return ptr.To(false)
	}
	e.Conditions = discoveryv1.EndpointConditions{Ready: has("ready"), Serving: has("serving"),
		Terminating: has("terminating")}
	return e
}

// slice is an IPv4 EndpointSlice of service ns/svc with one TCP port
// named portName.
func slice(ns, svc, sliceName, portName string, port int32, eps ...discoveryv1.Endpoint) *discoveryv1.EndpointSlice {
	return &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: ns, Name: sliceName,
			Labels: map[string]string{discoveryv1.LabelServiceName: svc},
		},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   eps,
		Ports: []discoveryv1.EndpointPort{{
			Name: ptr.To(portName), Port: ptr.To(port), Protocol: ptr.To(v1.ProtocolTCP),
		}},
	}
}

// mustContain fails unless every line is in text.
func mustContain(t *testing.T, text string, lines ...string) {
	t.Helper()
	for _, l := range lines {
		if !strings.Contains(text, l) {
			t.Errorf("missing %q in:\n%s", l, text)
		}
	}
}

func mustNotContain(t *testing.T, text string, parts ...string) {
	t.Helper()
	for _, l := range parts {
		if strings.Contains(text, l) {
			t.Errorf("unexpected %q in:\n%s", l, text)
		}
	}
}

func mustAddr(s string) netip.Addr { return netip.MustParseAddr(s) }

func udpPort(name string, port int32) v1.ServicePort {
	p := tcpPort(name, port)
	p.Protocol = v1.ProtocolUDP
	return p
}

// udpSlice is slice with a UDP port.
func udpSlice(ns, svc, sliceName, portName string, port int32, eps ...discoveryv1.Endpoint) *discoveryv1.EndpointSlice {
	s := slice(ns, svc, sliceName, portName, port, eps...)
	s.Ports[0].Protocol = ptr.To(v1.ProtocolUDP)
	return s
}
