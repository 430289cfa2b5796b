package proxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/knftables"
)

const nftPath = "/usr/sbin/nft"

// enterNewNetns moves the test's goroutine, locked to its OS thread, into
// a new network namespace. Processes started from this goroutine (nft,
// ip) are forked from that thread and inherit the namespace, and so do
// sockets it opens; the host's rules, interfaces and routes are never
// touched. Cleanup moves the thread back; the namespace, referenced by
// nothing else, is then freed by the kernel.
func enterNewNetns(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(nftPath); err != nil {
		t.Skipf("%s missing (Debian package nftables): %v", nftPath, err)
	}
	runtime.LockOSThread()
	orig, err := os.Open("/proc/thread-self/ns/net")
	if err != nil {
		runtime.UnlockOSThread()
		t.Fatalf("open own netns: %v", err)
	}
	if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
		orig.Close()
		runtime.UnlockOSThread()
		t.Fatalf("unshare netns: %v", err)
	}
	t.Cleanup(func() {
		defer orig.Close()
		if err := unix.Setns(int(orig.Fd()), unix.CLONE_NEWNET); err != nil {
			// Leave the thread locked: the runtime ends it with the
			// goroutine rather than reuse it in the wrong namespace.
			t.Errorf("return to own netns: %v", err)
			return
		}
		runtime.UnlockOSThread()
	})
}

// sh runs a command in the test's namespace (see enterNewNetns).
func sh(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// echoServer accepts connections and answers each with its own address.
func echoServer(t *testing.T, addr string) int32 {
	t.Helper()
	l, err := net.Listen("tcp4", addr)
	if err != nil {
		t.Fatalf("listen %s: %v", addr, err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			_, _ = io.WriteString(c, l.Addr().String())
			c.Close()
		}
	}()
	return int32(l.Addr().(*net.TCPAddr).Port)
}

// get connects to addr and returns what the server said.
func get(addr string) (string, error) {
	d := net.Dialer{Timeout: 10 * time.Second}
	c, err := d.Dial("tcp4", addr)
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(waitTimeout))
	b, err := io.ReadAll(c)
	return string(b), err
}

// TestRealNFTInNetns applies the ruleset with the real nft binary in a
// namespace of the test's own, and sends traffic through it: a cluster IP
// and a NodePort DNATed to local listeners, session affinity, rejection
// without endpoints, then incremental changes and deletion.
func TestRealNFTInNetns(t *testing.T) {
	enterNewNetns(t)
	sh(t, "ip", "link", "set", "lo", "up")
	// A veth pair, both ends here, stands for the node's uplink (the
	// dummy driver is not in every kernel).
	sh(t, "ip", "link", "add", "eth0", "type", "veth", "peer", "name", "eth0-peer")
	sh(t, "ip", "addr", "add", "10.0.0.2/24", "dev", "eth0")
	sh(t, "ip", "addr", "add", "10.0.0.3/24", "dev", "eth0")
	sh(t, "ip", "link", "set", "eth0", "up")
	sh(t, "ip", "link", "set", "eth0-peer", "up")
	// Locally sent packets are routed before the nat output hook runs:
	// the service range needs a route, as on a real node.
	sh(t, "ip", "route", "add", "10.96.0.0/12", "dev", "eth0")

	// Both endpoints listen on one port, as the pods of a deployment do
	// (the namespace is new: every port is free).
	portA := echoServer(t, "10.0.0.2:0")
	portB := echoServer(t, net.JoinHostPort("10.0.0.3", strconv.Itoa(int(portA))))

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
	clk := newTestClock()
	p, err := New(Config{NFT: nft, ClusterCIDR: "10.244.0.0/16", Logger: discardLogger(), Clock: clk})
	if err != nil {
		t.Fatalf("New: %v", err)
	}

	web := service("default", "web", "10.96.0.10", []v1.ServicePort{tcpPort("http", 80)}, withNodePort(30080))
	sticky := service("default", "sticky", "10.96.0.11", []v1.ServicePort{tcpPort("", 80)},
		withAffinity(ptr.To[int32](60)))
	empty := service("default", "empty", "10.96.0.12", []v1.ServicePort{tcpPort("", 80)})
	services := []*v1.Service{web, sticky, empty}
	slices := []*discoveryv1.EndpointSlice{
		slice("default", "web", "web-1", "http", portA, ep("10.0.0.2"), ep("10.0.0.3")),
		slice("default", "sticky", "sticky-1", "", portA, ep("10.0.0.2"), ep("10.0.0.3")),
	}
	if _, err := p.Sync(ctx, services, slices); err != nil {
		t.Fatalf("first sync: %v", err)
	}
	table := sh(t, nftPath, "list", "table", "ip", TableName)
	t.Logf("nft list table ip %s:\n%s", TableName, table)
	mustContain(t, table,
		"10.96.0.10 . tcp . 80 : goto service-",
		"10.96.0.11 . tcp . 80 : goto service-",
		`10.96.0.12 . tcp . 80 comment "default/empty/tcp" : goto reject-chain`,
		"tcp . 30080 : goto external-",
		"numgen random mod 2 vmap",
		fmt.Sprintf("dnat to 10.0.0.2:%d", portA),
		"update @affinity-",
	)

	want := map[string]bool{fmt.Sprintf("10.0.0.2:%d", portA): true, fmt.Sprintf("10.0.0.3:%d", portB): true}
	seen := map[string]bool{}
	for range 20 {
		got, err := get("10.96.0.10:80")
		if err != nil || !want[got] {
			t.Fatalf("cluster IP: got %q, %v; want one of %v", got, err, want)
		}
		seen[got] = true
	}
	t.Logf("cluster IP reached %v", seen)
	if got, err := get("10.0.0.2:30080"); err != nil || !want[got] {
		t.Fatalf("NodePort: got %q, %v; want one of %v", got, err, want)
	}

	// Affinity: every connection from this client goes where the first
	// one went (without it, 10 in a row to one of two would be chance).
	first, err := get("10.96.0.11:80")
	if err != nil || !want[first] {
		t.Fatalf("affinity service: got %q, %v", first, err)
	}
	for range 10 {
		if got, err := get("10.96.0.11:80"); got != first || err != nil {
			t.Fatalf("affinity: got %q, %v after %q", got, err, first)
		}
	}

	if _, err := get("10.96.0.12:80"); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("service without endpoints: got %v, want connection refused", err)
	}

	// Incremental: web loses 10.0.0.3; only web's objects are touched.
	slices[0] = slice("default", "web", "web-1", "http", portA, ep("10.0.0.2"))
	res, err := p.Sync(ctx, services, slices)
	if err != nil || res.Full || len(res.Changed) != 1 {
		t.Fatalf("endpoint change: %+v, %v", res, err)
	}
	for range 10 {
		if got, err := get("10.96.0.10:80"); got != fmt.Sprintf("10.0.0.2:%d", portA) || err != nil {
			t.Fatalf("after endpoint removal: got %q, %v", got, err)
		}
	}

	// Deleting services removes the map elements pointing to their
	// chains, their sets, and their chains' rules; the emptied chains
	// are deleted by a sync a second later.
	if _, err := p.Sync(ctx, []*v1.Service{empty}, nil); err != nil {
		t.Fatalf("delete services: %v", err)
	}
	table = sh(t, nftPath, "list", "table", "ip", TableName)
	mustNotContain(t, table, "affinity-", "10.96.0.10", "dnat to")
	mustContain(t, table, "chain "+serviceChain(ServicePortName{
		NamespacedName: types.NamespacedName{Namespace: "default", Name: "web"}, Port: "http", Protocol: v1.ProtocolTCP}))
	if _, err := get("10.96.0.10:80"); err == nil {
		t.Fatalf("deleted service still answers")
	}
	clk.Step(staleChainDelay)
	if res, err := p.Sync(ctx, []*v1.Service{empty}, nil); err != nil || res.DeletedChains != 7 {
		t.Fatalf("sync after the delay: %+v, %v; want 7 chains deleted", res, err)
	}
	table = sh(t, nftPath, "list", "table", "ip", TableName)
	mustNotContain(t, table, "default/web/", "default/sticky/")

	// Full syncs (as after a restart) on the table left by another
	// Proxier keep working, clear what they do not know and keep the
	// affinity sets, with the clients they remember, as they are.
	for i := range 2 {
		p, err := New(Config{NFT: nft, Logger: discardLogger()})
		if err != nil {
			t.Fatalf("New: %v", err)
		}
		if res, err := p.Sync(ctx, services[:2], slices[:2]); err != nil || !res.Full {
			t.Fatalf("full sync %d of a new proxier: %+v, %v", i, res, err)
		}
		if i == 0 {
			if first, err = get("10.96.0.11:80"); err != nil {
				t.Fatalf("affinity service: %v", err)
			}
			continue
		}
		// The client's entry survived the rewrite.
		mustContain(t, sh(t, nftPath, "list", "table", "ip", TableName), "elements = { 10.0.0.2 expires")
		for range 5 {
			if got, err := get("10.96.0.11:80"); got != first || err != nil {
				t.Fatalf("affinity lost in a full sync: got %q, %v after %q", got, err, first)
			}
		}
	}
	if got, err := get("10.96.0.10:80"); got != fmt.Sprintf("10.0.0.2:%d", portA) || err != nil {
		t.Fatalf("after full syncs: got %q, %v", got, err)
	}
	table = sh(t, nftPath, "list", "table", "ip", TableName)
	mustNotContain(t, table, "10.96.0.12")
}
