package framework

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"

	"golang.org/x/sys/unix"
)

// NodeGatewayIP is the host's address on the node network (the bridge
// natestbr, 10.123.0.0/24) and every node's default gateway: what runs on
// the host for the nodes (the API server, a registry) must listen on it (or
// on 0.0.0.0) and be named by it — the nodes' 127.0.0.1 is their own.
const NodeGatewayIP = "10.123.0.1"

// NodeInstance is hack/containerd.sh's instance "node<n>" (n in 1..9): a
// containerd in the network namespace natest-node<n> with the address
// 10.123.0.(10+n) on the node network. Its CNI config directory
// (/var/lib/nodeagent-node<n>/cni/net.d) starts empty: the agent writes it.
// Other n give an instance hack/containerd.sh refuses.
func NodeInstance(n int) Instance {
	name := fmt.Sprintf("node%d", n)
	return Instance{
		Name:       name,
		Socket:     "/run/nodeagent-" + name + "/containerd.sock",
		CgroupRoot: "/nodeagent-" + name,
		NetNS:      "natest-" + name,
		NodeIP:     fmt.Sprintf("10.123.0.%d", 10+n),
	}
}

// Command prepares name with args to run in the instance's network
// namespace (on the host for an instance without one). It uses nsenter, not
// `ip netns exec`: the command stays in the host's mount namespace, where
// containerd and the agent mount, and nsenter execs it in place, so the
// process's pid is the command's.
func (i Instance) Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	if i.NetNS == "" {
		return exec.CommandContext(ctx, name, args...)
	}
	return exec.CommandContext(ctx, "nsenter",
		append([]string{"--net=" + i.netnsPath(), name}, args...)...)
}

// Exec runs a command in the instance's network namespace (see Command) and
// returns its combined output, e.g. Exec(ctx, "curl", "-sS", url) to fetch
// from the node. (busybox wget segfaults on these machines; busybox nc
// works.)
func (i Instance) Exec(ctx context.Context, name string, args ...string) ([]byte, error) {
	out, err := i.Command(ctx, name, args...).CombinedOutput()
	if err != nil {
		return out, fmt.Errorf("%s in %s: %w", name, i.where(), err)
	}
	return out, nil
}

// DialContext connects from the instance's network namespace (from the host
// for an instance without one): the way to reach what the node's agent
// serves on its own 127.0.0.1. It fits http.Transport.DialContext.
func (i Instance) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	var conn net.Conn
	err := i.inNetNS(func() error {
		var err error
		var d net.Dialer
		conn, err = d.DialContext(ctx, network, addr)
		return err
	})
	return conn, err
}

// freePort returns a TCP port free on 127.0.0.1 in the instance's network
// namespace: ports are per namespace, so a port free on the host says
// nothing about the node's (where containerd's stream server, for one,
// holds a port of its own).
func (i Instance) freePort() (int, error) {
	var port int
	err := i.inNetNS(func() error {
		var err error
		port, err = freePort()
		return err
	})
	return port, err
}

// CNIConfDir is the instance's CNI configuration directory (the runtime's
// conf_dir), where an agent with --network-plugin=kubenet writes.
func (i Instance) CNIConfDir() string { return "/var/lib/nodeagent-" + i.Name + "/cni/net.d" }

func (i Instance) netnsPath() string { return "/run/netns/" + i.NetNS }

func (i Instance) where() string {
	if i.NetNS == "" {
		return "the host's network namespace"
	}
	return "network namespace " + i.NetNS
}

// inNetNS runs fn with its goroutine's thread in the instance's network
// namespace; sockets fn creates stay in it. The thread returns to its own
// namespace afterwards: left there, it would count as a process of the node
// (if it is the main thread, whose namespace is the process's) to
// hack/containerd.sh stop, which ends those. If it cannot return, its
// goroutine exits with the thread locked, so Go discards the thread instead
// of handing it to other goroutines.
func (i Instance) inNetNS(fn func() error) error {
	if i.NetNS == "" {
		return fn()
	}
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		own, err := os.Open(fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid()))
		if err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("own network namespace: %w", err)
			return
		}
		defer own.Close()
		target, err := os.Open(i.netnsPath())
		if err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("network namespace %s: %w", i.NetNS, err)
			return
		}
		defer target.Close()
		if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("enter network namespace %s: %w", i.NetNS, err)
			return
		}
		err = fn()
		if rerr := unix.Setns(int(own.Fd()), unix.CLONE_NEWNET); rerr != nil {
			errc <- errors.Join(err, fmt.Errorf("leave network namespace %s: %w", i.NetNS, rerr))
			return // still locked: the thread goes with the goroutine
		}
		runtime.UnlockOSThread()
		errc <- err
	}()
	return <-errc
}
