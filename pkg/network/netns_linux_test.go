package network

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// requireRoot fails, rather than skips: these tests exist to run on the
// project's machines, as root.
func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("this test needs root (CAP_NET_ADMIN and CAP_SYS_ADMIN) to create network namespaces")
	}
}

// newNetns creates a network namespace of the test's own and returns an
// open descriptor of it. Closing the descriptor at cleanup (after the
// test's sockets in it) destroys the namespace with every link, address,
// route and firewall rule in it, so nothing outlives the test even when it
// fails half-way.
func newNetns(t *testing.T) int {
	t.Helper()
	requireRoot(t)
	var fd int
	err := onFreshThread(func() (bool, error) {
		orig, err := openThreadNetns()
		if err != nil {
			return true, err
		}
		defer unix.Close(orig)
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			return true, fmt.Errorf("unshare: %w", err)
		}
		fd, err = openThreadNetns()
		if rerr := unix.Setns(orig, unix.CLONE_NEWNET); rerr != nil {
			return false, fmt.Errorf("restore the original network namespace: %w", rerr)
		}
		return true, err
	})
	if err != nil {
		t.Fatalf("create a network namespace: %v", err)
	}
	t.Cleanup(func() { _ = unix.Close(fd) })
	return fd
}

// inNetns runs fn on a thread in the namespace ns. Processes fn starts
// (ip, CNI plugins) start in ns too: a child inherits the namespace of the
// thread that forks it.
func inNetns(ns int, fn func() error) error {
	var fnErr error
	err := onFreshThread(func() (bool, error) {
		orig, err := openThreadNetns()
		if err != nil {
			return true, err
		}
		defer unix.Close(orig)
		if err := unix.Setns(ns, unix.CLONE_NEWNET); err != nil {
			return true, fmt.Errorf("enter network namespace: %w", err)
		}
		fnErr = fn()
		if err := unix.Setns(orig, unix.CLONE_NEWNET); err != nil {
			return false, fmt.Errorf("restore the original network namespace: %w", err)
		}
		return true, nil
	})
	if err != nil {
		return err
	}
	return fnErr
}

// onFreshThread runs fn on a goroutine locked to its thread. When fn says
// the thread's namespace could not be restored, the thread stays locked,
// and the runtime ends a locked thread when its goroutine returns: no other
// goroutine ever runs in the wrong namespace.
func onFreshThread(fn func() (restored bool, err error)) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		restored, err := fn()
		if restored {
			runtime.UnlockOSThread()
		}
		errc <- err
	}()
	return <-errc
}

func openThreadNetns() (int, error) {
	fd, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("open /proc/thread-self/ns/net: %w", err)
	}
	return fd, nil
}

// ip runs iproute2's ip in the namespace ns: an independent view of what
// the code under test did.
func ip(t *testing.T, ns int, args ...string) string {
	t.Helper()
	var out []byte
	err := inNetns(ns, func() error {
		var err error
		out, err = exec.Command("ip", args...).CombinedOutput()
		return err
	})
	if err != nil {
		t.Fatalf("ip %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}
