package proxy

import (
	"context"
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
	mu  sync.Mutex
	txs []string
	// fail, when set, makes the next Run fail without applying.
	fail error
}

func (r *recordingNFT) Run(ctx context.Context, tx *knftables.Transaction) error {
	r.mu.Lock()
	r.txs = append(r.txs, tx.String())
	fail := r.fail
	r.fail = nil
	r.mu.Unlock()
	if fail != nil {
		return fail
	}
	return r.Interface.Run(ctx, tx)
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

// newFakeProxier is a Proxier on knftables' fake, wrapped for recording.
func newFakeProxier(t *testing.T, cfg Config) (*Proxier, *knftables.Fake, *recordingNFT) {
	t.Helper()
	fake := knftables.NewFake(knftables.IPv4Family, TableName)
	rec := &recordingNFT{Interface: fake}
	cfg.NFT = rec
	if cfg.Logger == nil {
		cfg.Logger = discardLogger()
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
