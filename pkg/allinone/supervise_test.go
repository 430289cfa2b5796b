package allinone

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nodeagent/nodeagent/pkg/agentconfig"
)

func TestAgentArgs(t *testing.T) {
	flags := &agentconfig.Flags{Kubeconfig: "/d/node.kubeconfig", RootDir: "/r", HostnameOverride: "n1",
		NetworkPlugin: "kubenet", CNIConfDir: "/c", CNIBinDirs: []string{"/a", "/b"}, ServiceProxy: true, ClusterCIDR: "10.50.0.0/16"}
	on := true
	cfg := &agentconfig.Config{ClusterDNS: []string{"10.96.0.10"}, ClusterDomain: "cluster.local", ServerTLSBootstrap: &on}
	got := agentArgs(flags, cfg, "/etc/a.yaml", 4)
	want := []string{"agent", "--kubeconfig=/d/node.kubeconfig", "--root-dir=/r", "--hostname-override=n1", "--log-component=agent",
		"--config=/etc/a.yaml", "--cluster-dns=10.96.0.10", "--cluster-domain=cluster.local",
		"--network-plugin=kubenet", "--cni-conf-dir=/c", "--cni-bin-dir=/a,/b", "--service-proxy", "--rotate-server-certificates", "--cluster-cidr=10.50.0.0/16", "-v=4"}
	if !slices.Equal(got, want) {
		t.Errorf("args\n got %q\nwant %q", got, want)
	}
	got = agentArgs(&agentconfig.Flags{Kubeconfig: "/k", RootDir: "/r", HostnameOverride: "n1"}, &agentconfig.Config{}, "", 0)
	want = []string{"agent", "--kubeconfig=/k", "--root-dir=/r", "--hostname-override=n1", "--log-component=agent"}
	if !slices.Equal(got, want) {
		t.Errorf("minimal args\n got %q\nwant %q", got, want)
	}
}

func TestChildEnv(t *testing.T) {
	got := childEnv([]string{"A=1", "NOTIFY_SOCKET=/run/systemd/notify", "B=2"})
	if !slices.Equal(got, []string{"A=1", "B=2"}) {
		t.Errorf("env %q", got)
	}
}

// testChild is a shell script as the child: it runs setup, appends a
// line to runs, then runs body.
func testChild(t *testing.T, setup, body string) (*child, string) {
	t.Helper()
	dir := t.TempDir()
	runs := filepath.Join(dir, "runs")
	script := setup + "\necho run >>" + runs + "\n" + body
	return &child{Path: "/bin/sh", Args: []string{"-c", script}, Output: io.Discard,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Backoff: time.Millisecond, MaxBackoff: 4 * time.Millisecond,
		StopTimeout: time.Minute}, runs
}

func countRuns(path string) int {
	b, _ := os.ReadFile(path)
	return strings.Count(string(b), "run\n")
}

func TestSuperviseRestartsAnExitedChild(t *testing.T) {
	c, runs := testChild(t, "", "exit 3")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.supervise(ctx) }()
	for countRuns(runs) < 3 {
		select {
		case err := <-done:
			t.Fatalf("supervise returned %v while the child crashed", err)
		case <-time.After(10 * time.Millisecond):
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("supervise: %v", err)
	}
}

func TestSuperviseStopsTheChildWithSIGTERM(t *testing.T) {
	dir := t.TempDir()
	stopped := filepath.Join(dir, "stopped")
	// The child records SIGTERM and exits; it would otherwise run on.
	c, runs := testChild(t, "trap 'echo term >"+stopped+"; exit 0' TERM", "while :; do sleep 0.05; done")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.supervise(ctx) }()
	for countRuns(runs) < 1 {
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("supervise: %v", err)
	}
	if _, err := os.Stat(stopped); err != nil {
		t.Errorf("the child saw no SIGTERM: %v", err)
	}
	if n := countRuns(runs); n != 1 {
		t.Errorf("%d runs, want 1 (a stopped child is not restarted)", n)
	}
}

func TestSuperviseFailsWhenTheChildCannotStart(t *testing.T) {
	c, _ := testChild(t, "", "")
	c.Path = filepath.Join(t.TempDir(), "missing")
	if err := c.supervise(context.Background()); err == nil {
		t.Error("a missing binary: no error")
	}
}
