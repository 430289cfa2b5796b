package scheduler_test

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/component-base/metrics"

	"github.com/nodeagent/nodeagent/pkg/controlplane/scheduler"
)

// panicOnFirstBinding stands for a bug in the binding cycle: the first
// binding POST panics in the scheduler's goroutine.
type panicOnFirstBinding struct {
	rt     http.RoundTripper
	fired  atomic.Bool
	target string
}

func (p *panicOnFirstBinding) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/pods/"+p.target+"/binding") && p.fired.CompareAndSwap(false, true) {
		panic("injected binding bug")
	}
	return p.rt.RoundTrip(r)
}

// TestSchedulerRecoversAPanickingBind: a panic while binding is logged at
// error, the pod is retried and bound; the process goes on.
func TestSchedulerRecoversAPanickingBind(t *testing.T) {
	serverLog := slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
	rc := startControlPlaneConfig(t, serverLog)
	admin, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	createNode(t, admin, "only", "4", map[string]string{}, true)

	buggy := rest.CopyConfig(rc)
	buggy.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { return &panicOnFirstBinding{rt: rt, target: "victim"} }
	cs, err := kubernetes.NewForConfig(buggy)
	if err != nil {
		t.Fatal(err)
	}
	var logs lockedBuffer
	s, err := scheduler.New(scheduler.Config{
		Client: cs, SchedulerName: testScheduler, Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelError})),
		InitialBackoff: 100 * time.Millisecond, MaxBackoff: time.Second, Metrics: metrics.NewKubeRegistry(),
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	errc := make(chan error, 1)
	go func() { errc <- s.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-errc; err != nil {
			t.Errorf("scheduler Run: %v", err)
		}
	}()

	createPod(t, admin, "victim", "100m")
	if got := waitBound(t, admin, "victim"); got != "only" {
		t.Errorf("victim: bound to %q, want only", got)
	}
	for _, want := range []string{"level=ERROR", "callback panicked", "object=default/victim", `panic="injected binding bug"`} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("scheduler log lacks %s:\n%s", want, logs.String())
		}
	}
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
