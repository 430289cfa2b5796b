package ctrlutil_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/nodeagent/nodeagent/pkg/controlplane/controller/internal/ctrlutil"
)

// A panicking sync is logged at error and retried like a failed one; the
// other keys and the worker go on.
func TestRunWorkersRecoversAPanickingSync(t *testing.T) {
	var buf syncBuffer
	log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelError}))
	q := ctrlutil.NewQueue[string]("panics")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mu sync.Mutex
	calls := map[string]int{}
	done := make(chan struct{})
	syncFn := func(_ context.Context, key string) error {
		mu.Lock()
		calls[key]++
		n := calls[key]
		finished := calls["good"] > 0 && calls["bad"] == 2
		mu.Unlock()
		if key == "bad" && n == 1 {
			var m map[string]int
			m["nil map"]++ // the bug
		}
		if finished {
			close(done)
		}
		return nil
	}
	q.Add("bad")
	q.Add("good")
	errc := make(chan error, 1)
	go func() { errc <- ctrlutil.RunWorkers(ctx, log, q, 1, syncFn) }()
	<-done
	cancel()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"level=ERROR", "object=bad", "assignment to entry in nil map"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, buf.String())
		}
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
