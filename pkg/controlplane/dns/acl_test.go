package dns

import (
	"net"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/miekg/dns"
)

type fakeNodes map[netip.Addr]bool

func (n fakeNodes) IsNodeAddress(ip netip.Addr) bool { return n[ip] }

var (
	podCIDR     = netip.MustParsePrefix("10.244.0.0/16")
	serviceCIDR = netip.MustParsePrefix("10.96.0.0/12")
	nodeIP      = netip.MustParseAddr("192.0.2.11")
	outsider    = netip.MustParseAddr("203.0.113.9")
)

func TestACL(t *testing.T) {
	a := acl{cidrs: []netip.Prefix{podCIDR, serviceCIDR}, nodes: fakeNodes{nodeIP: true}}
	for src, want := range map[string]bool{
		"127.0.0.1":          true,
		"127.0.0.53":         true,
		"::1":                true,
		"10.244.3.7":         true, // a pod
		"::ffff:10.244.3.7":  true, // the same, as a dual-stack socket sees it
		"10.96.0.10":         true, // a service IP (hairpin through the proxy)
		"192.0.2.11":         true, // a node: hostNetwork pods, masqueraded traffic
		"192.0.2.12":         false,
		"203.0.113.9":        false,
		"10.245.0.1":         false,
		"fd00::1":            false,
		"::ffff:203.0.113.9": false,
	} {
		if got := a.mayRecurse(netip.MustParseAddr(src)); got != want {
			t.Errorf("mayRecurse(%s) = %v, want %v", src, got, want)
		}
	}
	if a.mayRecurse(netip.Addr{}) {
		t.Error("a query without a source address may recurse")
	}
	if (acl{}).mayRecurse(nodeIP) || !(acl{}).mayRecurse(netip.MustParseAddr("127.0.0.1")) {
		t.Error("without networks or nodes, only loopback may recurse")
	}
}

// writer is a dns.ResponseWriter for in-process queries from any source.
type writer struct {
	remote net.Addr
	msg    *dns.Msg
}

func (w *writer) LocalAddr() net.Addr       { return &net.UDPAddr{IP: net.IPv4(10, 96, 0, 10), Port: 53} }
func (w *writer) RemoteAddr() net.Addr      { return w.remote }
func (w *writer) WriteMsg(m *dns.Msg) error { w.msg = m; return nil }
func (w *writer) Write([]byte) (int, error) { panic("raw writes are not used") }
func (w *writer) Close() error              { return nil }
func (w *writer) TsigStatus() error         { return nil }
func (w *writer) TsigTimersOnly(bool)       {}
func (w *writer) Hijack()                   {}

func udpFrom(ip netip.Addr) net.Addr { return net.UDPAddrFromAddrPort(netip.AddrPortFrom(ip, 40000)) }
func tcpFrom(ip netip.Addr) net.Addr { return net.TCPAddrFromAddrPort(netip.AddrPortFrom(ip, 40000)) }

// ask sends req to srv in-process from src and returns the answer as the
// client would read it (packed and unpacked, so that truncation shows).
func ask(t *testing.T, srv *Server, src net.Addr, req *dns.Msg) (*dns.Msg, int) {
	t.Helper()
	w := &writer{remote: src}
	srv.ServeDNS(w, req)
	if w.msg == nil {
		t.Fatalf("%v: no answer", req.Question)
	}
	b, err := w.msg.Pack()
	if err != nil {
		t.Fatal(err)
	}
	out := new(dns.Msg)
	if err := out.Unpack(b); err != nil {
		t.Fatal(err)
	}
	return out, len(b)
}

// Names outside the cluster zone are forwarded for cluster clients only;
// the zone itself is answered to anyone.
func TestRecursionOnlyForClusterClients(t *testing.T) {
	up := startUpstream(t, answerA(1, false), answerA(1, false))
	srv := newServer(t, t.Context(), Config{Upstreams: []string{up.addr}, RecursionCIDRs: []netip.Prefix{podCIDR, serviceCIDR},
		Nodes: fakeNodes{nodeIP: true}}, clusterObjects()...)
	external := new(dns.Msg).SetQuestion("example.org.", dns.TypeA)

	for _, src := range []net.Addr{udpFrom(outsider), tcpFrom(outsider)} {
		resp, _ := ask(t, srv, src, external)
		if resp.Rcode != dns.RcodeRefused || len(resp.Answer) != 0 {
			t.Errorf("example.org from %s: %s with %d records, want REFUSED", src, dns.RcodeToString[resp.Rcode], len(resp.Answer))
		}
		resp, _ = ask(t, srv, src, new(dns.Msg).SetQuestion("web.default.svc.cluster.local.", dns.TypeA))
		if want := []string{"web.default.svc.cluster.local. 5 IN A 10.96.0.10"}; resp.Rcode != dns.RcodeSuccess || !slices.Equal(rrs(resp.Answer), want) {
			t.Errorf("a cluster name from %s: %s %q, want %q", src, dns.RcodeToString[resp.Rcode], rrs(resp.Answer), want)
		}
		// An ExternalName's target is not resolved for them.
		resp, _ = ask(t, srv, src, new(dns.Msg).SetQuestion("ext.default.svc.cluster.local.", dns.TypeA))
		if want := []string{"ext.default.svc.cluster.local. 5 IN CNAME example.org."}; !slices.Equal(rrs(resp.Answer), want) {
			t.Errorf("an ExternalName from %s: %q, want the bare CNAME %q", src, rrs(resp.Answer), want)
		}
	}
	if n := up.udp.Load() + up.tcp.Load(); n != 0 {
		t.Fatalf("the upstream got %d queries for a client outside the cluster", n)
	}
	for _, ip := range []string{"10.244.0.7", "192.0.2.11", "127.0.0.1"} {
		resp, _ := ask(t, srv, udpFrom(netip.MustParseAddr(ip)), external)
		if want := []string{"example.org. 60 IN A 192.0.2.1"}; resp.Rcode != dns.RcodeSuccess || !slices.Equal(rrs(resp.Answer), want) {
			t.Errorf("example.org from %s: %s %q, want %q", ip, dns.RcodeToString[resp.Rcode], rrs(resp.Answer), want)
		}
	}
}

// A client asking for a 64 KiB EDNS0 buffer gets at most maxUDPSize over
// UDP, truncated, and the whole answer over TCP.
func TestEDNSBufferCap(t *testing.T) {
	const n = 120 // about 2 KB of A records: over the cap, under 4096
	up := startUpstream(t, answerA(n, false), answerA(n, false))
	srv := newServer(t, t.Context(), Config{Upstreams: []string{up.addr}})
	req := new(dns.Msg).SetQuestion("big.example.org.", dns.TypeA)
	req.SetEdns0(dns.MaxMsgSize, false)
	lo := netip.MustParseAddr("127.0.0.1")

	resp, size := ask(t, srv, udpFrom(lo), req)
	if !resp.Truncated || size > maxUDPSize || len(resp.Answer) >= n {
		t.Errorf("over UDP with a 65535-byte buffer: %d bytes, %d records, TC %v; want at most %d bytes and TC",
			size, len(resp.Answer), resp.Truncated, maxUDPSize)
	}
	if opt := resp.IsEdns0(); opt == nil || opt.UDPSize() != maxUDPSize {
		t.Errorf("OPT %v, want one advertising %d", opt, maxUDPSize)
	}
	if resp, _ := ask(t, srv, tcpFrom(lo), req); resp.Truncated || len(resp.Answer) != n {
		t.Errorf("over TCP: %d records, TC %v; want %d", len(resp.Answer), resp.Truncated, n)
	}
}

// fakeClock is a clock the test moves.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time       { return c.t }
func (c *fakeClock) step(d time.Duration) { c.t = c.t.Add(d) }
func newFakeClock() *fakeClock            { return &fakeClock{t: time.Unix(1700000000, 0)} }

func TestLimiter(t *testing.T) {
	clock := newFakeClock()
	l := newLimiter(2, 3, clock.now)
	a, b := netip.MustParseAddr("10.244.0.1"), netip.MustParseAddr("10.244.0.2")
	steps := []struct {
		step time.Duration
		ip   netip.Addr
		want bool
	}{
		{0, a, true}, {0, a, true}, {0, a, false}, // a burst of 2
		{0, b, true},                                        // another client has its own bucket
		{500 * time.Millisecond, a, true},                   // one token back after half a second
		{0, a, false},                                       //
		{time.Minute, a, true}, {0, a, true}, {0, a, false}, // saved up to the burst only
	}
	for i, s := range steps {
		clock.step(s.step)
		if got := l.allow(s.ip); got != s.want {
			t.Fatalf("step %d (%s after %v): allow %v, want %v", i, s.ip, s.step, got, s.want)
		}
	}
	if newLimiter(0, 3, clock.now).allow(a) != true || newLimiter(-1, 3, clock.now) != nil {
		t.Error("a rate of 0 or less does not disable the limit")
	}
}

// The table of clients is bounded: when it is full of busy clients, new
// ones share one bucket; idle clients are forgotten.
func TestLimiterBounded(t *testing.T) {
	clock := newFakeClock()
	l := newLimiter(1, 2, clock.now)
	ip := func(i int) netip.Addr { return netip.AddrFrom4([4]byte{10, 244, 1, byte(i)}) }
	if !l.allow(ip(1)) || !l.allow(ip(2)) {
		t.Fatal("first queries refused")
	}
	if !l.allow(ip(3)) || l.allow(ip(4)) {
		t.Fatal("clients beyond the table do not share one bucket")
	}
	if len(l.clients) != 2 {
		t.Fatalf("%d clients tracked, want 2", len(l.clients))
	}
	clock.step(2 * time.Second) // everyone idle: their buckets refilled
	if !l.allow(ip(5)) || l.allow(ip(5)) {
		t.Fatal("a new client after the idle ones went is not tracked on its own")
	}
	if _, ok := l.clients[ip(5)]; !ok || len(l.clients) != 1 {
		t.Fatalf("tracked %v, want only the new client", l.clients)
	}
}

// Over its rate a UDP client gets an empty truncated answer (it retries
// over TCP, which is not limited: TCP cannot be spoofed to reflect).
func TestRateLimitTruncates(t *testing.T) {
	clock := newFakeClock()
	srv := newServer(t, t.Context(), Config{Upstreams: []string{"127.0.0.1:1"}, RateLimit: 1, Now: clock.now}, clusterObjects()...)
	req := new(dns.Msg).SetQuestion("web.default.svc.cluster.local.", dns.TypeA)
	pod := netip.MustParseAddr("10.244.0.7")
	if resp, _ := ask(t, srv, udpFrom(pod), req); resp.Truncated || len(resp.Answer) != 1 {
		t.Fatalf("first query: %d records, TC %v", len(resp.Answer), resp.Truncated)
	}
	resp, size := ask(t, srv, udpFrom(pod), req)
	if !resp.Truncated || len(resp.Answer) != 0 || resp.Id != req.Id || size > req.Len() {
		t.Fatalf("over the rate: %d records, TC %v, %d bytes (query %d); want an empty truncated reply", len(resp.Answer), resp.Truncated, size, req.Len())
	}
	if resp, _ := ask(t, srv, tcpFrom(pod), req); resp.Truncated || len(resp.Answer) != 1 {
		t.Fatalf("over TCP: %d records, TC %v", len(resp.Answer), resp.Truncated)
	}
	clock.step(time.Second)
	if resp, _ := ask(t, srv, udpFrom(pod), req); resp.Truncated || len(resp.Answer) != 1 {
		t.Fatalf("a second later: %d records, TC %v", len(resp.Answer), resp.Truncated)
	}
}
