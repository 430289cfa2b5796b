package dns

import (
	"context"
	"io"
	"log/slog"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
)

// startServer serves the objects, through a fake clientset's informers,
// on a free port of 127.0.0.1, and returns that address.
func startServer(t *testing.T, cfg Config, objs ...runtime.Object) string {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	srv := newServer(t, ctx, cfg, objs...)
	if err := srv.Listen(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return srv.Addr()
}

// newServer is a server of the objects, through a fake clientset's
// informers (stopped with ctx or the test), not yet listening: its
// ServeDNS answers in-process queries.
func newServer(t *testing.T, ctx context.Context, cfg Config, objs ...runtime.Object) *Server {
	t.Helper()
	factory := informers.NewSharedInformerFactory(fake.NewClientset(objs...), 0)
	svcs, err := NewInformerServices(factory)
	if err != nil {
		t.Fatal(err)
	}
	eps, err := NewInformerEndpoints(factory)
	if err != nil {
		t.Fatal(err)
	}
	factory.Start(ctx.Done())
	t.Cleanup(factory.Shutdown)
	for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			t.Fatalf("%v cache did not sync", typ)
		}
	}
	cfg.Address, cfg.Services, cfg.Endpoints = "127.0.0.1:0", svcs, eps
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	srv, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return srv
}

// query asks addr over net ("udp" or "tcp") for name and qtype.
func query(t *testing.T, addr, netw, name string, qtype uint16) *dns.Msg {
	t.Helper()
	c := &dns.Client{Net: netw, Timeout: 5 * time.Second}
	resp, _, err := c.Exchange(new(dns.Msg).SetQuestion(dns.Fqdn(name), qtype), addr)
	if err != nil {
		t.Fatalf("%s %s over %s: %v", name, dns.TypeToString[qtype], netw, err)
	}
	return resp
}

// upstream is a fake upstream resolver on 127.0.0.1 with separate UDP
// and TCP handlers, counting the queries each got.
type upstream struct {
	addr     string
	udp, tcp atomic.Int32
}

func startUpstream(t *testing.T, onUDP, onTCP dns.HandlerFunc) *upstream {
	t.Helper()
	pc, l, err := listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u := &upstream{addr: pc.LocalAddr().String()}
	count := func(n *atomic.Int32, h dns.HandlerFunc) dns.HandlerFunc {
		return func(w dns.ResponseWriter, r *dns.Msg) { n.Add(1); h(w, r) }
	}
	servers := []*dns.Server{
		{PacketConn: pc, Handler: count(&u.udp, onUDP)},
		{Listener: l, Handler: count(&u.tcp, onTCP)},
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, len(servers))
	for _, s := range servers {
		go func() { done <- serve(ctx, s) }()
	}
	t.Cleanup(func() {
		cancel()
		for range servers {
			if err := <-done; err != nil {
				t.Errorf("upstream: %v", err)
			}
		}
	})
	return u
}

// answerA answers every A query with n addresses 192.0.2.1...
func answerA(n int, truncated bool) dns.HandlerFunc {
	return func(w dns.ResponseWriter, r *dns.Msg) {
		m := new(dns.Msg).SetReply(r)
		m.Truncated = truncated
		if !truncated && r.Question[0].Qtype == dns.TypeA {
			for i := range n {
				m.Answer = append(m.Answer, &dns.A{Hdr: hdr(r.Question[0].Name, dns.TypeA, 60),
					A: net.IPv4(192, 0, byte(2+i/250), byte(1+i%250))})
			}
		}
		_ = w.WriteMsg(m)
	}
}

var discard = slog.New(slog.NewTextHandler(io.Discard, nil))

// Cluster objects shared by the tests.

func namespace(name string) *v1.Namespace {
	return &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
}

func service(ns, name, clusterIP string, ports ...v1.ServicePort) *v1.Service {
	return &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       v1.ServiceSpec{Type: v1.ServiceTypeClusterIP, ClusterIP: clusterIP, Ports: ports},
	}
}

func port(name string, proto v1.Protocol, n int32) v1.ServicePort {
	return v1.ServicePort{Name: name, Protocol: proto, Port: n, TargetPort: intstr.FromInt32(n)}
}

func clusterObjects() []runtime.Object {
	kube := service("default", "kubernetes", "10.96.0.1", port("https", v1.ProtocolTCP, 443))
	web := service("default", "web", "10.96.0.10", port("http", v1.ProtocolTCP, 80), port("dns", v1.ProtocolUDP, 53))
	web.Spec.ClusterIPs = []string{"10.96.0.10", "fd00::10"}
	db := service("default", "db", v1.ClusterIPNone, port("pg", v1.ProtocolTCP, 5432))
	empty := service("default", "empty", v1.ClusterIPNone)
	unready := service("default", "unready", v1.ClusterIPNone)
	unready.Spec.PublishNotReadyAddresses = true
	ext := &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "ext"},
		Spec:       v1.ServiceSpec{Type: v1.ServiceTypeExternalName, ExternalName: "example.org"},
	}
	alias := &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "alias"},
		Spec:       v1.ServiceSpec{Type: v1.ServiceTypeExternalName, ExternalName: "web.default.svc.cluster.local"},
	}
	dbEndpoints := &v1.Endpoints{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "db"},
		Subsets: []v1.EndpointSubset{{
			Addresses: []v1.EndpointAddress{
				{IP: "10.244.0.5", Hostname: "db-0"},
				{IP: "10.244.0.6"},
			},
			NotReadyAddresses: []v1.EndpointAddress{{IP: "10.244.0.7", Hostname: "db-2"}},
			Ports:             []v1.EndpointPort{{Name: "pg", Protocol: v1.ProtocolTCP, Port: 5432}},
		}},
	}
	unreadyEndpoints := &v1.Endpoints{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "unready"},
		Subsets: []v1.EndpointSubset{{
			NotReadyAddresses: []v1.EndpointAddress{{IP: "10.244.0.8"}},
		}},
	}
	return []runtime.Object{namespace("default"), namespace("other"),
		kube, web, db, empty, unready, ext, alias, dbEndpoints, unreadyEndpoints}
}

// fakeServices and fakeEndpoints are empty sources.
type fakeServices struct{}

func (fakeServices) Service(string, string) (*v1.Service, bool) { return nil, false }
func (fakeServices) ServicesByIP(string) []*v1.Service          { return nil }
func (fakeServices) NamespaceExists(string) bool                { return false }

type fakeEndpoints struct{}

func (fakeEndpoints) ServiceEndpoints(string, string) []Endpoint { return nil }
func (fakeEndpoints) EndpointsByIP(string) []Endpoint            { return nil }
