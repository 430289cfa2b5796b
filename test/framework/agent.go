package framework

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	v1 "k8s.io/api/core/v1"
)

// Agent is one nodeagent process with its own directories.
type Agent struct {
	Bin         string
	Dir         string // everything of this agent lives below
	ManifestDir string
	RootDir     string
	LogsDir     string // the agent's podLogsDir
	NodeName    string
	// Port is the read-only port, on 127.0.0.1 of the agent's network
	// namespace: for an agent on a node instance, reach it with HTTPClient.
	Port int
	// SecurePort is the authenticated node API (the kubelet's 10250), on
	// all addresses: SecureAddr says where the host reaches it.
	SecurePort int
	ExtraArgs  []string

	inst   Instance
	client *http.Client // dials in inst's network namespace

	mu   sync.Mutex
	cmd  *exec.Cmd
	logs *SyncBuffer
	done chan error
}

// NewAgent prepares an agent on the test instance under dir; Start runs it.
func NewAgent(bin, dir string) (*Agent, error) { return NewAgentOn(bin, dir, TestInstance) }

// NewAgentOn prepares an agent on the given containerd instance.
func NewAgentOn(bin, dir string, inst Instance) (*Agent, error) {
	a := &Agent{
		Bin:         bin,
		Dir:         dir,
		ManifestDir: filepath.Join(dir, "manifests"),
		RootDir:     filepath.Join(dir, "root"),
		LogsDir:     filepath.Join(dir, "pods-logs"),
		NodeName:    "e2e-node",
		inst:        inst,
		client:      http.DefaultClient,
		logs:        &SyncBuffer{},
	}
	if inst.NetNS != "" {
		a.client = &http.Client{Transport: &http.Transport{DialContext: inst.DialContext}}
	}
	for _, d := range []string{a.ManifestDir, a.RootDir, a.LogsDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	// Ports are per network namespace: an agent on a node instance gets
	// ports free in its namespace, not the host's.
	port, err := inst.freePort()
	if err != nil {
		return nil, err
	}
	a.Port = port
	if a.SecurePort, err = inst.freePort(); err != nil {
		return nil, err
	}
	// imageGCHighThresholdPercent 100: no image GC for space. The
	// instances are shared by the tests and the machine's disk may be
	// past the kubelet's 85%: a collection would take the busybox image
	// from under the other tests. (imageMaximumGCAge still turns it on.)
	// evictionHard {}: no eviction thresholds, for the same shared disk
	// (past the kubelet's nodefs.available 10%, it would evict the tests'
	// pods); eviction tests set their own with SetEvictionHard.
	// serverTLSBootstrap (upstream's default is false): joined agents
	// request their serving certificate, which nodeagent's API server
	// verifies and its controllers sign, as `nodeagent server` sets it for
	// its own agent; standalone agents ignore it.
	cfg := fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
staticPodPath: %s
containerRuntimeEndpoint: unix://%s
readOnlyPort: %d
port: %d
healthzPort: 0
podLogsDir: %s
cgroupRoot: %s
fileCheckFrequency: 20s
syncFrequency: 10s
imageGCHighThresholdPercent: 100
evictionHard: {}
serverTLSBootstrap: true
`, a.ManifestDir, inst.Socket, a.Port, a.SecurePort, a.LogsDir, inst.CgroupRoot)
	return a, os.WriteFile(filepath.Join(dir, "config.yaml"), []byte(cfg), 0o644)
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Start runs the agent and waits until its read-only API answers. On a
// node instance the agent runs in the node's network namespace with
// --node-ip set to the node's address (before ExtraArgs, which may
// override it).
func (a *Agent) Start() error {
	a.mu.Lock()
	args := []string{"agent", "--config", filepath.Join(a.Dir, "config.yaml"),
		"--root-dir", a.RootDir, "--hostname-override", a.NodeName}
	if a.inst.NodeIP != "" {
		args = append(args, "--node-ip", a.inst.NodeIP)
	}
	args = append(args, a.ExtraArgs...)
	// inst.Command execs the agent in place (nsenter), so cmd.Process is
	// the agent itself: Stop's SIGTERM and Pdeathsig reach it.
	cmd := a.inst.Command(context.Background(), a.Bin, args...)
	cmd.Stdout, cmd.Stderr = a.logs, a.logs
	// Own process group: a Ctrl-C meant for the test does not reach the agent.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := cmd.Start(); err != nil {
		a.mu.Unlock()
		return fmt.Errorf("start agent: %w", err)
	}
	a.cmd = cmd
	done := make(chan error, 1)
	a.done = done
	go func() { done <- cmd.Wait() }()
	a.mu.Unlock()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if _, err := a.Pods(); err == nil {
			return nil
		}
		select {
		case err := <-done:
			// The exit is taken: Stop must not wait for it again.
			a.mu.Lock()
			a.cmd = nil
			a.mu.Unlock()
			return fmt.Errorf("agent exited at start: %v\n%s", err, a.Logs())
		case <-time.After(50 * time.Millisecond):
		}
	}
	return fmt.Errorf("agent API did not answer\n%s", a.Logs())
}

// Stop sends SIGTERM and waits for the agent to exit.
func (a *Agent) Stop() error {
	a.mu.Lock()
	cmd, done := a.cmd, a.done
	a.cmd = nil
	a.mu.Unlock()
	if cmd == nil {
		return nil
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("agent exit: %w", err)
		}
		return nil
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		<-done
		return fmt.Errorf("agent did not stop on SIGTERM")
	}
}

// HTTPClient returns a client that connects from the agent's network
// namespace, so that http://127.0.0.1:<Port>/... reaches the read-only API
// (and anything else on the node's loopback) of an agent on a node
// instance; for the other instances it is http.DefaultClient.
func (a *Agent) HTTPClient() *http.Client { return a.client }

// SecureAddr is host:port of the node API as the host reaches it: the
// node's IP on a node instance, else 127.0.0.1.
func (a *Agent) SecureAddr() string {
	host := "127.0.0.1"
	if a.inst.NodeIP != "" {
		host = a.inst.NodeIP
	}
	return net.JoinHostPort(host, strconv.Itoa(a.SecurePort))
}

// Instance is the containerd instance the agent runs on.
func (a *Agent) Instance() Instance { return a.inst }

// AppendConfig adds KubeletConfiguration lines to the agent's config file
// (before Start).
func (a *Agent) AppendConfig(lines string) error {
	if lines == "" {
		return nil
	}
	f, err := os.OpenFile(filepath.Join(a.Dir, "config.yaml"), os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(lines); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// SetEvictionHard replaces the agent's evictionHard (before Start), a
// flow-style YAML map such as `{memory.available: 1Gi}`.
func (a *Agent) SetEvictionHard(thresholds string) error {
	return a.replaceConfig("evictionHard: {}\n", "evictionHard: "+thresholds+"\n")
}

// SetImageGCThresholds replaces the agent's imageGCHighThresholdPercent
// (100: off) and sets imageGCLowThresholdPercent (before Start).
func (a *Agent) SetImageGCThresholds(high, low int) error {
	return a.replaceConfig("imageGCHighThresholdPercent: 100\n",
		fmt.Sprintf("imageGCHighThresholdPercent: %d\nimageGCLowThresholdPercent: %d\n", high, low))
}

// replaceConfig replaces the line old of the agent's config file by new.
func (a *Agent) replaceConfig(old, new string) error {
	path := filepath.Join(a.Dir, "config.yaml")
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if !strings.Contains(string(b), old) {
		return fmt.Errorf("%s has no line %q", path, strings.TrimSpace(old))
	}
	return os.WriteFile(path, []byte(strings.Replace(string(b), old, new, 1)), 0o644)
}

// Logs returns everything the agent logged so far.
func (a *Agent) Logs() string { return a.logs.String() }

// WriteManifest writes a manifest file atomically (write, then rename), as
// tools that drop manifests should.
func (a *Agent) WriteManifest(name, content string) error {
	tmp := filepath.Join(a.Dir, "."+name+".tmp")
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(a.ManifestDir, name))
}

// RemoveManifest deletes a manifest file.
func (a *Agent) RemoveManifest(name string) error {
	return os.Remove(filepath.Join(a.ManifestDir, name))
}

// Pods reads the agent's /pods.
func (a *Agent) Pods() ([]v1.Pod, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://127.0.0.1:"+strconv.Itoa(a.Port)+"/pods", nil)
	resp, err := a.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /pods: %s", resp.Status)
	}
	var list v1.PodList
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		return nil, fmt.Errorf("decode /pods: %w", err)
	}
	return list.Items, nil
}

// Pod returns the static pod with the given manifest name (the agent adds
// the node name suffix), or nil.
func (a *Agent) Pod(name string) (*v1.Pod, error) {
	pods, err := a.Pods()
	if err != nil {
		return nil, err
	}
	for i := range pods {
		if pods[i].Name == name+"-"+a.NodeName {
			return &pods[i], nil
		}
	}
	return nil, nil
}

// WaitPod polls until cond holds for the named pod, returning it. It fails
// after timeout with the last status seen.
func (a *Agent) WaitPod(name string, timeout time.Duration, cond func(*v1.Pod) bool) (*v1.Pod, error) {
	deadline := time.Now().Add(timeout)
	var last *v1.Pod
	for {
		p, err := a.Pod(name)
		if err == nil && p != nil {
			last = p
			if cond(p) {
				return p, nil
			}
		}
		if time.Now().After(deadline) {
			b, _ := json.MarshalIndent(last, "", "  ")
			return last, fmt.Errorf("pod %s: condition not met within %s; last seen:\n%s", name, timeout, b)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// WaitGone polls until the agent no longer lists the pod.
func (a *Agent) WaitGone(name string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if p, err := a.Pod(name); err == nil && p == nil {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("pod %s still listed after %s", name, timeout)
}

// WaitLog polls until the agent's log contains s.
func (a *Agent) WaitLog(s string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if strings.Contains(a.Logs(), s) {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("agent log lacks %q after %s", s, timeout)
}

// SyncBuffer is a bytes.Buffer a process writes its output to while a
// test reads it.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// NewFreePort returns a TCP port free on 127.0.0.1 at the time of the call.
func NewFreePort() (int, error) { return freePort() }

// UnmountUnder detaches every mount at or below dir, deepest first: what
// an agent (or a test) mounted under its temporary directory must not
// outlive the test.
func UnmountUnder(dir string) error {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return err
	}
	var points []string
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) > 4 && (f[4] == dir || strings.HasPrefix(f[4], dir+"/")) {
			points = append(points, f[4])
		}
	}
	sort.Sort(sort.Reverse(sort.StringSlice(points)))
	var errs []error
	for _, p := range points {
		if err := syscall.Unmount(p, syscall.MNT_DETACH); err != nil && err != syscall.EINVAL {
			errs = append(errs, fmt.Errorf("unmount %s: %w", p, err))
		}
	}
	return errors.Join(errs...)
}
