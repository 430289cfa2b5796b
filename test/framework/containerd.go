package framework

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	nart "github.com/nodeagent/nodeagent/pkg/runtime"
)

// Instance is one of hack/containerd.sh's test containerd instances, with
// the cgroup root its agents run their pods under.
type Instance struct {
	Name       string // hack/containerd.sh's INSTANCE
	Socket     string
	CgroupRoot string
	// NetNS is the network namespace (under /run/netns) the instance's
	// containerd, and so its agent and pods, run in; NodeIP is the node's
	// address there. Both are empty for the instances on the host's network
	// (main, test, test2). See NodeInstance.
	NetNS  string
	NodeIP string
	// PodSubnet is the subnet of the CNI network hack/containerd.sh gives
	// the instance's pods; empty for the node instances, whose agent writes
	// the network from its Node's pod CIDR.
	PodSubnet string
}

// TestInstance is the "test" instance every end-to-end test uses;
// Test2Instance is the second node of multi-node tests; Containerd2Instance
// runs containerd 2 (hack/containerd2.sh) for the end-to-end tests that
// NODEAGENT_E2E_RUNTIME=containerd2 selects (InstanceFromEnv), with a
// cgroup root of its own so that it can run beside the test instance.
var (
	TestInstance = Instance{Name: "test", Socket: TestSocket, CgroupRoot: CgroupRoot,
		PodSubnet: "10.89.0.0/16"}
	Test2Instance = Instance{Name: "test2", Socket: "/run/nodeagent-test2/containerd.sock",
		CgroupRoot: "/nodeagent-e2e2", PodSubnet: "10.90.0.0/16"}
	Containerd2Instance = Instance{Name: "containerd2", Socket: "/run/nodeagent-containerd2/containerd.sock",
		CgroupRoot: "/nodeagent-e2e-c2", PodSubnet: "10.91.0.0/16"}
)

// RuntimeEnv is the environment variable that chooses the instance the
// end-to-end tests run on: unset (or "test") for the test instance
// (Debian's containerd 1.6), "containerd2" for Containerd2Instance.
const RuntimeEnv = "NODEAGENT_E2E_RUNTIME"

// InstanceFromEnv is the instance RuntimeEnv chooses; any other value is
// an error, not a silent fall back to the default.
func InstanceFromEnv() (Instance, error) {
	switch v := os.Getenv(RuntimeEnv); v {
	case "", TestInstance.Name:
		return TestInstance, nil
	case Containerd2Instance.Name:
		return Containerd2Instance, nil
	default:
		return Instance{}, fmt.Errorf("%s=%q: want %q, %q or unset", RuntimeEnv, v, Containerd2Instance.Name, TestInstance.Name)
	}
}

// TestSocket is the CRI socket of the "test" containerd instance.
const TestSocket = "/run/nodeagent-test/containerd.sock"

// BusyboxImage is the busybox image hack/setup.sh imports into every
// instance.
const BusyboxImage = "localhost/nodeagent/busybox:1"

// RepoRoot is the repository's top directory.
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// StartContainerd makes sure the test instance runs (starting it if its
// socket does not answer) and returns a stop function that stops it only
// if this call started it.
func StartContainerd() (stop func() error, err error) { return TestInstance.Start() }

// Start makes sure the instance runs (starting it if its socket does not
// answer) and returns a stop function that stops it only if this call
// started it.
func (i Instance) Start() (stop func() error, err error) {
	script := filepath.Join(RepoRoot(), "hack", "containerd.sh")
	wasRunning := i.running()
	out, err := exec.Command("bash", script, "start", i.Name).CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("start %s containerd: %v\n%s", i.Name, err, out)
	}
	if wasRunning {
		return func() error { return nil }, nil
	}
	return i.stop, nil
}

// stop runs hack/containerd.sh stop: for a node instance that also deletes
// its network namespace, veth and, with the last node, the bridge.
func (i Instance) stop() error {
	script := filepath.Join(RepoRoot(), "hack", "containerd.sh")
	out, err := exec.Command("bash", script, "stop", i.Name).CombinedOutput()
	if err != nil {
		return fmt.Errorf("stop %s containerd: %v\n%s", i.Name, err, out)
	}
	return nil
}

// running says whether hack/containerd.sh status finds the instance's
// socket answering.
func (i Instance) running() bool {
	script := filepath.Join(RepoRoot(), "hack", "containerd.sh")
	return exec.Command("bash", script, "status", i.Name).Run() == nil
}

// DialCRI connects to the test instance.
func DialCRI() (*nart.Client, error) { return TestInstance.Dial() }

// Dial connects to the instance's CRI socket.
func (i Instance) Dial() (*nart.Client, error) {
	return nart.Dial(context.Background(), "unix://"+i.Socket, 2*time.Minute)
}

// built are the nodeagent binaries BuildAgent built.
var built struct {
	sync.Mutex
	bins map[string]bool
}

// BuildAgent compiles cmd/nodeagent into dir, as make build does (with
// the bundled kubectl's version, KubectlVersion), and returns the
// binary's path. The same dir gets one build per test binary.
func BuildAgent(dir string) (string, error) {
	bin := filepath.Join(dir, "nodeagent")
	built.Lock()
	defer built.Unlock()
	if built.bins[bin] {
		return bin, nil
	}
	cmd := exec.Command("go", "build", "-ldflags", kubectlLDFlags(), "-o", bin, "./cmd/nodeagent")
	cmd.Dir = RepoRoot()
	cmd.Env = os.Environ()
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build nodeagent: %v\n%s", err, out)
	}
	if built.bins == nil {
		built.bins = map[string]bool{}
	}
	built.bins[bin] = true
	return bin, nil
}

// CgroupRoot is the cgroup root test agents run their pods under.
const CgroupRoot = "/nodeagent-e2e"

// SweepSandboxes stops and removes every sandbox of the test instance,
// which belongs to the tests alone, and the pod cgroups a killed agent
// could not remove.
func SweepSandboxes(cri *nart.Client) error { return TestInstance.Sweep(cri) }

// Sweep is SweepSandboxes for the instance cri is connected to.
func (i Instance) Sweep(cri *nart.Client) error {
	ctx := context.Background()
	sbs, err := cri.ListPodSandbox(ctx, nil)
	if err != nil {
		return fmt.Errorf("sweep: %w", err)
	}
	var errs []error
	for _, sb := range sbs {
		_ = cri.StopPodSandbox(ctx, sb.Id)
		if err := cri.RemovePodSandbox(ctx, sb.Id); err != nil {
			errs = append(errs, fmt.Errorf("sweep sandbox %s: %w", sb.Id, err))
		}
	}
	pods, _ := filepath.Glob("/sys/fs/cgroup/*" + i.CgroupRoot + "/kubepods/*/pod*")
	more, _ := filepath.Glob("/sys/fs/cgroup/*" + i.CgroupRoot + "/kubepods/pod*")
	for _, dir := range append(pods, more...) {
		if err := os.Remove(dir); err != nil && !os.IsNotExist(err) {
			errs = append(errs, fmt.Errorf("sweep cgroup: %w", err))
		}
	}
	return errors.Join(errs...)
}

// KillContainerdDaemon stops only the test instance's containerd process,
// as a crash would: the shims, and so the containers, keep running.
func KillContainerdDaemon() error { return TestInstance.KillDaemon() }

// KillDaemon is KillContainerdDaemon for the instance: its pid is in the
// file hack/containerd.sh keeps beside the socket (for every instance but
// main).
func (i Instance) KillDaemon() error {
	pidFile := filepath.Join(filepath.Dir(i.Socket), "containerd.pid")
	b, err := os.ReadFile(pidFile)
	if err != nil {
		return fmt.Errorf("%s containerd pid: %w", i.Name, err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return fmt.Errorf("%s containerd pid %q: %w", i.Name, b, err)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		return fmt.Errorf("kill %s containerd: %w", i.Name, err)
	}
	for range 100 {
		if syscall.Kill(pid, 0) != nil {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("%s containerd (pid %d) did not exit", i.Name, pid)
}

// RestartContainerd starts the test instance again after
// KillContainerdDaemon.
func RestartContainerd() error { return TestInstance.Restart() }

// Restart starts the instance again after KillDaemon.
func (i Instance) Restart() error {
	script := filepath.Join(RepoRoot(), "hack", "containerd.sh")
	if out, err := exec.Command("bash", script, "start", i.Name).CombinedOutput(); err != nil {
		return fmt.Errorf("restart %s containerd: %v\n%s", i.Name, err, out)
	}
	return nil
}
