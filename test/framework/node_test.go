package framework

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestNodeInstances starts node1 and node2 (hack/containerd.sh), checks that
// each containerd answers in its own network namespace and that the nodes
// reach each other and the host over the node network, then stops them and
// checks that their namespaces, veths and (with no other node left) the
// bridge are gone.
func TestNodeInstances(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: creates network namespaces and runs containerd")
	}
	for _, tool := range []string{"ip", "nsenter", "busybox", "containerd"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed", tool)
		}
	}
	nodes := []Instance{NodeInstance(1), NodeInstance(2)}
	for _, n := range nodes {
		if n.running() {
			t.Skipf("%s already runs: not disturbing it", n.Name)
		}
	}
	// The bridge goes with the last node: only if no other node uses it.
	otherNodes := bridgePorts(t)

	// Stop even what a failed start left half made (the script's stop
	// tears down whatever exists); the test stops them itself first.
	for _, n := range nodes {
		t.Cleanup(func() {
			if err := n.stop(); err != nil {
				t.Error(err)
			}
		})
	}
	// In parallel, as multi-node tests will: the bridge is made once.
	if err := parallel(nodes, func(n Instance) error { _, err := n.Start(); return err }); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, n := range nodes {
		checkNodeRuntime(ctx, t, n)
	}

	// node2 serves a greeting on a port free in its namespace.
	node1, node2 := nodes[0], nodes[1]
	port, err := node2.freePort()
	if err != nil {
		t.Fatal(err)
	}
	nc := node2.Command(ctx, "busybox", "nc", "-ll", "-p", strconv.Itoa(port), "-e", "busybox", "echo", "hello from node2")
	if err := nc.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = nc.Process.Kill(); _ = nc.Wait() })
	node2Addr := net.JoinHostPort(node2.NodeIP, strconv.Itoa(port))

	// From node1's namespace, by a process there and by a Go dial there.
	var out []byte
	deadline := time.Now().Add(10 * time.Second)
	for {
		out, err = node1.Exec(ctx, "busybox", "nc", "-w", "2", node2.NodeIP, strconv.Itoa(port))
		if err == nil && strings.Contains(string(out), "hello from node2") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("node1 -> %s: %v: %q", node2Addr, err, out)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if got, err := greeting(ctx, node1.DialContext, node2Addr); err != nil || got != "hello from node2" {
		t.Fatalf("Go dial in node1 -> %s: %q, %v", node2Addr, got, err)
	}
	// node2's loopback is its own: the listener is there, reached in node2.
	if got, err := greeting(ctx, node2.DialContext, net.JoinHostPort("127.0.0.1", strconv.Itoa(port))); err != nil || got != "hello from node2" {
		t.Fatalf("Go dial in node2 -> its 127.0.0.1:%d: %q, %v", port, got, err)
	}
	// The host reaches the node, and the node the host's gateway address
	// (where a control plane for the nodes listens).
	var d net.Dialer
	if got, err := greeting(ctx, d.DialContext, node2Addr); err != nil || got != "hello from node2" {
		t.Fatalf("host -> %s: %q, %v", node2Addr, got, err)
	}
	checkNodeReachesHost(ctx, t, node1)

	// Stop both, as their cleanup would, and check what is left.
	_ = nc.Process.Kill()
	_ = nc.Wait()
	if err := parallel(nodes, Instance.stop); err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		if _, err := os.Stat(n.netnsPath()); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s: network namespace %s still there (%v)", n.Name, n.NetNS, err)
		}
		veth := "natv" + strings.TrimPrefix(n.Name, "node")
		if _, err := os.Stat("/sys/class/net/" + veth); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s: veth %s still there (%v)", n.Name, veth, err)
		}
	}
	if len(otherNodes) == 0 {
		if _, err := os.Stat("/sys/class/net/natestbr"); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("bridge natestbr still there (%v)", err)
		}
	} else {
		t.Logf("other nodes on natestbr (%v): bridge kept", otherNodes)
	}
}

// checkNodeRuntime checks that the node's containerd answers, runs in the
// node's network namespace and the host's mount namespace, and reports its
// network not ready (no CNI config until an agent writes one).
func checkNodeRuntime(ctx context.Context, t *testing.T, n Instance) {
	t.Helper()
	cri, err := n.Dial()
	if err != nil {
		t.Fatalf("%s: %v", n.Name, err)
	}
	defer cri.Close()
	if _, err := cri.Version(ctx, "v1"); err != nil {
		t.Fatalf("%s: CRI Version: %v", n.Name, err)
	}
	st, err := cri.Status(ctx, false)
	if err != nil {
		t.Fatalf("%s: CRI Status: %v", n.Name, err)
	}
	for _, c := range st.GetStatus().GetConditions() {
		if c.Type == "NetworkReady" && c.Status {
			t.Errorf("%s: NetworkReady before any CNI config", n.Name)
		}
	}
	b, err := os.ReadFile("/run/nodeagent-" + n.Name + "/containerd.pid")
	if err != nil {
		t.Fatal(err)
	}
	pid := strings.TrimSpace(string(b))
	for _, c := range []struct{ ns, want string }{{"net", n.netnsPath()}, {"mnt", "/proc/self/ns/mnt"}} {
		var got, want syscall.Stat_t
		if err := syscall.Stat("/proc/"+pid+"/ns/"+c.ns, &got); err != nil {
			t.Fatal(err)
		}
		if err := syscall.Stat(c.want, &want); err != nil {
			t.Fatal(err)
		}
		if got.Ino != want.Ino {
			t.Errorf("%s: containerd (pid %s) %s namespace is not %s's", n.Name, pid, c.ns, c.want)
		}
	}
}

// checkNodeReachesHost has a process in the node greet a listener on the
// host's node-network address.
func checkNodeReachesHost(ctx context.Context, t *testing.T, n Instance) {
	t.Helper()
	l, err := net.Listen("tcp", net.JoinHostPort(NodeGatewayIP, "0"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	got := make(chan string, 1)
	go func() {
		c, err := l.Accept()
		if err != nil {
			got <- err.Error()
			return
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		s, _ := bufio.NewReader(c).ReadString('\n')
		got <- strings.TrimSpace(s)
	}()
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	cmd := n.Command(ctx, "busybox", "nc", "-w", "5", NodeGatewayIP, port)
	cmd.Stdin = strings.NewReader("hello from " + n.Name + "\n")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s -> %s:%s: %v: %s", n.Name, NodeGatewayIP, port, err, out)
	}
	select {
	case s := <-got:
		if s != "hello from "+n.Name {
			t.Fatalf("host got %q from %s", s, n.Name)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("host got nothing from %s", n.Name)
	}
}

// greeting dials addr with dial and returns the first line it reads.
func greeting(ctx context.Context, dial func(context.Context, string, string) (net.Conn, error), addr string) (string, error) {
	c, err := dial(ctx, "tcp", addr)
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	s, err := bufio.NewReader(c).ReadString('\n')
	return strings.TrimSpace(s), err
}

// bridgePorts lists the links on natestbr (none if it does not exist).
func bridgePorts(t *testing.T) []string {
	entries, err := os.ReadDir("/sys/class/net/natestbr/brif")
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var ports []string
	for _, e := range entries {
		ports = append(ports, e.Name())
	}
	return ports
}

// parallel runs fn for every instance at once and joins the errors.
func parallel(insts []Instance, fn func(Instance) error) error {
	var wg sync.WaitGroup
	errs := make([]error, len(insts))
	for k, inst := range insts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := fn(inst); err != nil {
				errs[k] = fmt.Errorf("%s: %w", inst.Name, err)
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}
