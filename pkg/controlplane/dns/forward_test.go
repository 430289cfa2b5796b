package dns

import (
	"net"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/miekg/dns"
)

func TestForward(t *testing.T) {
	up := startUpstream(t, answerA(1, false), answerA(1, false))
	addr := startServer(t, Config{Upstreams: []string{up.addr}}, clusterObjects()...)
	req := new(dns.Msg).SetQuestion("example.org.", dns.TypeA)
	resp, _, err := (&dns.Client{}).Exchange(req, addr)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"example.org. 60 IN A 192.0.2.1"}
	if got := rrs(resp.Answer); !slices.Equal(got, want) || resp.Id != req.Id {
		t.Fatalf("forwarded answer %q (id %d), want %q (id %d)", got, resp.Id, want, req.Id)
	}
	if up.udp.Load() != 1 || up.tcp.Load() != 0 {
		t.Errorf("upstream queries: udp %d tcp %d, want 1 and 0", up.udp.Load(), up.tcp.Load())
	}
	// Reverse names that are not the cluster's are forwarded too.
	if resp := query(t, addr, "udp", "9.9.9.9.in-addr.arpa", dns.TypePTR); resp.Rcode != dns.RcodeSuccess || up.udp.Load() != 2 {
		t.Errorf("PTR outside the cluster: %s, upstream udp queries %d", dns.RcodeToString[resp.Rcode], up.udp.Load())
	}
}

// An upstream answer truncated over UDP is fetched again over TCP; the
// client then gets all of it over TCP, and a truncated part over UDP.
func TestForwardTCPFallback(t *testing.T) {
	const n = 60 // 60 A records do not fit 512 bytes
	up := startUpstream(t, answerA(n, true), answerA(n, false))
	addr := startServer(t, Config{Upstreams: []string{up.addr}}, clusterObjects()...)

	resp := query(t, addr, "tcp", "big.example.org", dns.TypeA)
	if len(resp.Answer) != n || resp.Truncated {
		t.Fatalf("over TCP: %d records (truncated %v), want %d", len(resp.Answer), resp.Truncated, n)
	}
	if up.udp.Load() != 1 || up.tcp.Load() != 1 {
		t.Errorf("upstream queries: udp %d tcp %d, want 1 and 1", up.udp.Load(), up.tcp.Load())
	}
	resp = query(t, addr, "udp", "big.example.org", dns.TypeA)
	if !resp.Truncated || len(resp.Answer) >= n {
		t.Errorf("over UDP without EDNS0: %d records (truncated %v), want fewer and TC", len(resp.Answer), resp.Truncated)
	}
	req := new(dns.Msg).SetQuestion("big.example.org.", dns.TypeA)
	req.SetEdns0(4096, false)
	resp, _, err := (&dns.Client{UDPSize: 4096}).Exchange(req, addr)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Truncated || len(resp.Answer) != n || resp.IsEdns0() == nil {
		t.Errorf("over UDP with a 4096-byte EDNS0 buffer: %d records (truncated %v, OPT %v), want %d",
			len(resp.Answer), resp.Truncated, resp.IsEdns0() != nil, n)
	}
}

func TestForwardFailover(t *testing.T) {
	up := startUpstream(t, answerA(1, false), answerA(1, false))
	dead := deadUDP(t)
	addr := startServer(t, Config{Upstreams: []string{dead, up.addr}}, clusterObjects()...)
	if resp := query(t, addr, "udp", "example.org", dns.TypeA); len(resp.Answer) != 1 {
		t.Fatalf("failover answer: %v", resp)
	}
	addr = startServer(t, Config{Upstreams: []string{dead}}, clusterObjects()...)
	if resp := query(t, addr, "udp", "example.org", dns.TypeA); resp.Rcode != dns.RcodeServerFailure {
		t.Fatalf("no upstream answering: %s, want SERVFAIL", dns.RcodeToString[resp.Rcode])
	}
}

// deadUDP is a loopback address where nothing listens.
func deadUDP(t *testing.T) string {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := pc.LocalAddr().String()
	_ = pc.Close()
	return addr
}

func TestUpstreamsFromResolvConf(t *testing.T) {
	path := filepath.Join(t.TempDir(), "resolv.conf")
	conf := "search example.org\nnameserver 10.0.0.2\nnameserver fd00::2\noptions ndots:2\n"
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := upstreamsOf(&Config{ResolvConf: path})
	if want := []string{"10.0.0.2:53", "[fd00::2]:53"}; err != nil || !slices.Equal(got, want) {
		t.Fatalf("upstreams %q, %v; want %q", got, err, want)
	}
	got, err = upstreamsOf(&Config{ResolvConf: path, Upstreams: []string{"1.1.1.1", "[::1]:5353"}})
	if want := []string{"1.1.1.1:53", "[::1]:5353"}; err != nil || !slices.Equal(got, want) {
		t.Fatalf("upstreams %q, %v; want %q", got, err, want)
	}
	if _, err := upstreamsOf(&Config{Upstreams: []string{"dns.example.org"}}); err == nil {
		t.Fatal("a host name upstream was accepted")
	}
}

func TestWithoutSelf(t *testing.T) {
	all := []string{"127.0.0.1:53", "127.0.0.53:53", "10.0.0.2:53", "127.0.0.1:5353"}
	kept, dropped := withoutSelf(all, &net.UDPAddr{IP: net.IPv4zero, Port: 53})
	if want := []string{"10.0.0.2:53", "127.0.0.1:5353"}; !slices.Equal(kept, want) || len(dropped) != 2 {
		t.Errorf("bound to 0.0.0.0:53: kept %q, dropped %q", kept, dropped)
	}
	kept, _ = withoutSelf(all, &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 5353})
	if want := all[:3]; !slices.Equal(kept, want) {
		t.Errorf("bound to 127.0.0.1:5353: kept %q, want %q", kept, want)
	}
}
