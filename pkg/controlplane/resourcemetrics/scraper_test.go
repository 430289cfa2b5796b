package resourcemetrics

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeagent/nodeagent/pkg/controlplane/apiserver/kubeletproxy/kubelettest"
)

// fakeKubelets answer Fetch: "up" with a constant 500m load on a clock
// that advances 15s per scrape, "down" with an error, "hang" never.
type fakeKubelets struct {
	mu    sync.Mutex
	start time.Time
	now   time.Time
}

func (f *fakeKubelets) fetch(ctx context.Context, node *v1.Node) (io.ReadCloser, error) {
	switch node.Name {
	case "down":
		return nil, errors.New("connection refused")
	case "hang":
		<-ctx.Done()
		return nil, ctx.Err()
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.now = f.now.Add(15 * time.Second)
	text := kubelettest.ResourceMetrics(f.start, f.now, kubelettest.Load{MilliCores: 500, MemoryBytes: 1 << 30},
		kubelettest.ContainerLoad{Namespace: "ns", Pod: "web", Container: "c", Load: kubelettest.Load{MilliCores: 120, MemoryBytes: 64 << 20}})
	return io.NopCloser(strings.NewReader(text)), nil
}

func named(names ...string) []*v1.Node {
	var out []*v1.Node
	for _, n := range names {
		out = append(out, &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}})
	}
	return out
}

func TestScraperSkipsNodesWithoutAgents(t *testing.T) {
	f := &fakeKubelets{start: t0, now: t0}
	var logs bytes.Buffer
	var logMu sync.Mutex
	sc, err := New(Config{
		Nodes:   func(context.Context) ([]*v1.Node, error) { return named("up", "down", "hang"), nil },
		Fetch:   f.fetch,
		Timeout: 100 * time.Millisecond,
		Logger:  slog.New(slog.NewTextHandler(lockedWriter{&logs, &logMu}, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		begin := time.Now()
		sc.Scrape(t.Context())
		if d := time.Since(begin); d > 2*time.Second {
			t.Fatalf("a scrape took %s: the hanging node was not cut off", d)
		}
	}
	nodes := sc.Storage().NodeMetrics(named("up", "down", "hang")...)
	if len(nodes) != 1 || nodes[0].Name != "up" {
		t.Fatalf("node metrics: %+v, want only up's", nodes)
	}
	if cpu := nodes[0].Usage[v1.ResourceCPU]; cpu.String() != "500m" || nodes[0].Window.Duration != 15*time.Second {
		t.Errorf("up: cpu %s window %s, want 500m over 15s", cpu.String(), nodes[0].Window.Duration)
	}
	pods := sc.Storage().PodMetrics(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web"}})
	if len(pods) != 1 || pods[0].Containers[0].Usage.Cpu().String() != "120m" || pods[0].Containers[0].Usage.Memory().String() != "64Mi" {
		t.Errorf("pod metrics: %+v", pods)
	}
	logMu.Lock()
	defer logMu.Unlock()
	if n := strings.Count(logs.String(), "scraping node failed"); n != 2 {
		t.Errorf("logged %d scrape failures in 3 scrapes of 2 failing nodes, want 2 (once each):\n%s", n, logs.String())
	}
}

type lockedWriter struct {
	w  io.Writer
	mu *sync.Mutex
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func TestScraperRunStopsWithContext(t *testing.T) {
	scrapes := make(chan struct{}, 10)
	sc, err := New(Config{
		Nodes: func(context.Context) ([]*v1.Node, error) {
			scrapes <- struct{}{}
			return nil, nil
		},
		Fetch:      func(context.Context, *v1.Node) (io.ReadCloser, error) { return nil, errors.New("unused") },
		Resolution: time.Hour,
		Logger:     quiet(),
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- sc.Run(ctx) }()
	<-scrapes // the first scrape comes at once, not after a resolution
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
}

func TestNewRequiresSources(t *testing.T) {
	if _, err := New(Config{}); err == nil {
		t.Error("New without Nodes and Fetch succeeded")
	}
}
