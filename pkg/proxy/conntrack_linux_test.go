package proxy

import (
	"context"
	"net"
	"net/netip"
	"strconv"
	"testing"
	"time"

	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"sigs.k8s.io/knftables"
)

// udpServer listens on addr; its channel gets every datagram. (Sources
// may be masqueraded: clients say who they are in the payload.)
func udpServer(t *testing.T, addr string) (int32, <-chan string) {
	t.Helper()
	c, err := net.ListenPacket("udp4", addr)
	if err != nil {
		t.Fatalf("listen %s: %v", addr, err)
	}
	t.Cleanup(func() { c.Close() })
	from := make(chan string, 100)
	go func() {
		buf := make([]byte, 100)
		for {
			n, _, err := c.ReadFrom(buf)
			if err != nil {
				return
			}
			from <- string(buf[:n])
		}
	}()
	return int32(c.LocalAddr().(*net.UDPAddr).Port), from
}

// received fails unless a datagram from client reaches the server of ch.
func received(t *testing.T, ch <-chan string, client netip.AddrPort, what string) {
	t.Helper()
	deadline := time.After(waitTimeout)
	for {
		select {
		case a := <-ch:
			if a == client.String() {
				return
			}
		case <-deadline:
			t.Fatalf("%s: nothing from %s", what, client)
		}
	}
}

// flowsFrom lists the conntrack entries of the flows a client port sent.
func flowsFrom(t *testing.T, client netip.AddrPort) []Flow {
	t.Helper()
	conn, err := netlink.Dial(unix.NETLINK_NETFILTER, nil)
	if err != nil {
		t.Fatalf("netlink: %v", err)
	}
	defer conn.Close()
	entries, err := dumpConntrack(conn)
	if err != nil {
		t.Fatalf("dump: %v", err)
	}
	var out []Flow
	for _, e := range entries {
		if e.orig.src == client.Addr() && e.orig.sport == client.Port() {
			out = append(out, e.flow())
		}
	}
	return out
}

// TestRealConntrackInNetns sends UDP through the real ruleset in a
// namespace of the test's own, moves the service to another endpoint and
// checks that the Proxier deleted the flow's conntrack entry (and only
// it), so that the client's next datagram reaches the new endpoint.
func TestRealConntrackInNetns(t *testing.T) {
	enterNewNetns(t)
	sh(t, "ip", "link", "set", "lo", "up")
	sh(t, "ip", "link", "add", "eth0", "type", "veth", "peer", "name", "eth0-peer")
	sh(t, "ip", "addr", "add", "10.0.0.2/24", "dev", "eth0")
	sh(t, "ip", "addr", "add", "10.0.0.3/24", "dev", "eth0")
	sh(t, "ip", "link", "set", "eth0", "up")
	sh(t, "ip", "link", "set", "eth0-peer", "up")
	sh(t, "ip", "route", "add", "10.96.0.0/12", "dev", "eth0")

	port, atA := udpServer(t, "10.0.0.2:0")
	_, atB := udpServer(t, net.JoinHostPort("10.0.0.3", strconv.Itoa(int(port))))

	nft, err := knftables.New(knftables.IPv4Family, TableName)
	if err != nil {
		t.Fatalf("knftables.New: %v", err)
	}
	ctx := context.Background()
	t.Cleanup(func() {
		if err := Cleanup(ctx, nft); err != nil {
			t.Errorf("Cleanup: %v", err)
		}
	})
	// The default Conntrack: ctnetlink, in this goroutine's namespace.
	p, err := New(Config{NFT: nft, Logger: discardLogger(), Clock: newTestClock()})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	dns := service("default", "dns", "10.96.0.53", []v1.ServicePort{udpPort("dns", 53)})
	other := service("default", "other", "10.96.0.54", []v1.ServicePort{udpPort("dns", 53)})
	services := []*v1.Service{dns, other}
	sync := func(dnsEP string) SyncResult {
		t.Helper()
		res, err := p.Sync(ctx, services, []*discoveryv1.EndpointSlice{
			udpSlice("default", "dns", "dns-1", "dns", port, ep(dnsEP)),
			udpSlice("default", "other", "other-1", "dns", port, ep("10.0.0.2")),
		})
		if err != nil {
			t.Fatalf("Sync: %v", err)
		}
		return res
	}
	sync("10.0.0.2")

	// Three clients: one of dns, one of the other service (same
	// endpoint), one straight to the endpoint.
	send := func(c *net.UDPConn, to string) {
		t.Helper()
		if _, err := c.WriteToUDPAddrPort([]byte(c.LocalAddr().String()), netip.MustParseAddrPort(to)); err != nil {
			t.Fatalf("send to %s: %v", to, err)
		}
	}
	client := func() (*net.UDPConn, netip.AddrPort) {
		c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(10, 0, 0, 2)})
		if err != nil {
			t.Fatalf("client socket: %v", err)
		}
		t.Cleanup(func() { c.Close() })
		return c, c.LocalAddr().(*net.UDPAddr).AddrPort()
	}
	direct := net.JoinHostPort("10.0.0.2", strconv.Itoa(int(port)))
	c1, a1 := client()
	c2, a2 := client()
	c3, a3 := client()
	send(c1, "10.96.0.53:53")
	received(t, atA, a1, "dns before the move")
	send(c2, "10.96.0.54:53")
	received(t, atA, a2, "other service")
	send(c3, direct)
	received(t, atA, a3, "endpoint directly")
	endpointA := netip.MustParseAddrPort(direct)
	if f := flowsFrom(t, a1); len(f) != 1 || f[0].Endpoint != endpointA {
		t.Fatalf("dns client's flows %+v, want one DNATed to %s", f, endpointA)
	}

	// dns moves to 10.0.0.3: its flow to 10.0.0.2 is deleted, the
	// others stay.
	res := sync("10.0.0.3")
	if res.ConntrackDeleted != 1 {
		t.Errorf("sync deleted %d conntrack entries, want 1", res.ConntrackDeleted)
	}
	if f := flowsFrom(t, a1); len(f) != 0 {
		t.Errorf("dns client's flows after the move: %+v, want none", f)
	}
	for _, a := range []netip.AddrPort{a2, a3} {
		if f := flowsFrom(t, a); len(f) != 1 {
			t.Errorf("flows of %s: %+v, want it kept", a, f)
		}
	}
	// The client, sending on from the same port, reaches the new
	// endpoint.
	send(c1, "10.96.0.53:53")
	received(t, atB, a1, "dns after the move")
}
