// Package controlplane_test runs `nodeagent server` in-process and drives
// it the way users do: with upstream's kubectl (the nodeagent binary,
// built once, run as kubectl) and with client-go.
package controlplane_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/nodeagent/nodeagent/pkg/controlplane/server"
	"github.com/nodeagent/nodeagent/test/framework"
)

const (
	kubectlTimeout = 30 * time.Second
	readyTimeout   = 90 * time.Second
	stopTimeout    = 30 * time.Second
)

// kubectlVersion is stamped into the test kubectl.
const kubectlVersion = framework.KubectlVersion

var (
	workDir     string // temp root: kubectl, HOME (kubectl's cache), data dirs
	kubectlBin  string
	shared      *testServer // the server most tests share
	adminConfig string      // its admin kubeconfig
)

func TestMain(m *testing.M) { os.Exit(runMain(m)) }

func runMain(m *testing.M) int {
	var err error
	if workDir, err = os.MkdirTemp("", "controlplane-e2e-"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(workDir)
	if err := buildKubectl(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	cfg := newServerConfig(filepath.Join(workDir, "shared"))
	cfg.APIServeHook = panicOnHeader
	if shared, err = startServer(cfg); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	adminConfig = filepath.Join(cfg.DataDir, server.KubeconfigFile)
	code := m.Run()
	if err := shared.stop(); err != nil {
		fmt.Fprintln(os.Stderr, "stopping the shared server:", err)
		code = 1
	}
	return code
}

func buildKubectl() error {
	begin := time.Now()
	bin, err := framework.BuildKubectl(workDir)
	if err != nil {
		return err
	}
	kubectlBin = bin
	fmt.Fprintf(os.Stderr, "built kubectl in %s\n", time.Since(begin).Round(100*time.Millisecond))
	return nil
}

// testServer is one in-process control plane.
type testServer struct {
	cfg    server.Config
	cancel context.CancelFunc
	errc   chan error
}

// newServerConfig picks free loopback ports for the secure port and etcd.
func newServerConfig(dataDir string) server.Config {
	return server.Config{
		DataDir:        dataDir,
		SecurePort:     freePort(),
		BindAddress:    "127.0.0.1",
		EtcdClientPort: freePort(),
		EtcdPeerPort:   freePort(),
		DisableAgent:   true,
		Logger:         slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
		// Scrape Ready nodes' resource metrics every second, not every
		// 15s, so that `kubectl top` has two samples soon.
		MetricResolution: time.Second,
	}
}

func freePort() int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startServer runs server.Run and waits until it is ready.
func startServer(cfg server.Config) (*testServer, error) {
	ready := make(chan struct{})
	cfg.Ready = ready
	ctx, cancel := context.WithCancel(context.Background())
	s := &testServer{cfg: cfg, cancel: cancel, errc: make(chan error, 1)}
	go func() { s.errc <- server.Run(ctx, cfg) }()
	select {
	case <-ready:
		return s, nil
	case err := <-s.errc:
		cancel()
		return nil, fmt.Errorf("server.Run returned before ready: %v", err)
	case <-time.After(readyTimeout):
		cancel()
		return nil, fmt.Errorf("server not ready after %s", readyTimeout)
	}
}

// stop cancels Run and waits for it to return.
func (s *testServer) stop() error {
	s.cancel()
	select {
	case err := <-s.errc:
		return err
	case <-time.After(stopTimeout):
		return fmt.Errorf("server.Run did not return %s after cancel", stopTimeout)
	}
}

func (s *testServer) kubeconfig() string { return filepath.Join(s.cfg.DataDir, server.KubeconfigFile) }

// kubectl runs kubectl against the shared server.
func kubectl(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	return kubectlWith(t, adminConfig, args...)
}

func kubectlWith(t *testing.T, kubeconfig string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	// Not t.Context(): cleanups (namespace deletion) run after it ends.
	ctx, cancel := context.WithTimeout(context.Background(), kubectlTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, kubectlBin, append([]string{"--kubeconfig", kubeconfig}, args...)...)
	cmd.Env = kubectlEnv()
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err = cmd.Run()
	t.Logf("kubectl %s: err=%v\n%s%s", strings.Join(args, " "), err, o.String(), e.String())
	return o.String(), e.String(), err
}

// kubectlEnv keeps kubectl's caches in the temp dir and ignores $KUBECONFIG.
func kubectlEnv() []string {
	return []string{"HOME=" + workDir, "PATH=" + os.Getenv("PATH")}
}

// mustKubectl runs kubectl and fails the test if it fails.
func mustKubectl(t *testing.T, args ...string) string {
	t.Helper()
	out, stderr, err := kubectl(t, args...)
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, stderr)
	}
	return out
}

var nonName = regexp.MustCompile(`[^a-z0-9]+`)

// namespace creates a namespace for the test with kubectl and deletes it
// when the test ends (without waiting if the test failed: a bound pod
// left behind never finishes terminating without a node agent).
func namespace(t *testing.T) string {
	t.Helper()
	name := strings.Trim(nonName.ReplaceAllString(strings.ToLower(t.Name()), "-"), "-")
	if len(name) > 50 {
		name = name[:50]
	}
	name = "e2e-" + name
	if out := mustKubectl(t, "create", "namespace", name); out != "namespace/"+name+" created\n" {
		t.Fatalf("kubectl create namespace: got %q", out)
	}
	t.Cleanup(func() {
		args := []string{"delete", "namespace", name, "--timeout=60s"}
		if t.Failed() {
			args = append(args, "--wait=false")
		}
		if _, stderr, err := kubectl(t, args...); err != nil {
			t.Errorf("deleting namespace %s: %v\n%s", name, err, stderr)
		}
	})
	return name
}

// writeFile writes a manifest into the test's temp dir.
func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

var columnSep = regexp.MustCompile(`\s{2,}`)

// rows splits kubectl's table output into cells (columns are separated by
// at least two spaces; single spaces occur inside headers such as
// "NOMINATED NODE").
func rows(out string) [][]string {
	var r [][]string
	for line := range strings.SplitSeq(strings.TrimRight(out, "\n"), "\n") {
		r = append(r, columnSep.Split(strings.TrimSpace(line), -1))
	}
	return r
}

// checkRow compares cells with want, where "*" matches anything (AGE).
func checkRow(t *testing.T, what string, got, want []string) {
	t.Helper()
	ok := len(got) == len(want)
	for i := 0; ok && i < len(want); i++ {
		ok = want[i] == "*" || got[i] == want[i]
	}
	if !ok {
		t.Errorf("%s: got %q, want %q", what, got, want)
	}
}
