package server

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestPostStartHookReadiness: /readyz names the hook as failed until it
// finished, as kube-apiserver's poststarthook/<name> checks.
func TestPostStartHookReadiness(t *testing.T) {
	release := make(chan struct{})
	hook := &postStartHook{name: "rbac/bootstrap-roles", timeout: time.Minute,
		run: func(ctx context.Context) error { <-release; return nil }}
	h := &healthChecks{etcdHealth: func(context.Context) error { return nil }, hooks: []*postStartHook{hook}}
	h.ready.Store(true)
	mux := http.NewServeMux()
	h.register(mux)
	get := func() (int, string) {
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz?verbose", nil))
		return rec.Code, rec.Body.String()
	}
	if code, body := get(); code != http.StatusServiceUnavailable ||
		!strings.Contains(body, "[-]poststarthook/rbac/bootstrap-roles failed: reason withheld\n") {
		t.Errorf("/readyz while the hook runs = %d %q", code, body)
	}
	close(release)
	if err := runHook(context.Background(), hook); err != nil {
		t.Fatal(err)
	}
	if code, body := get(); code != http.StatusOK || !strings.Contains(body, "[+]poststarthook/rbac/bootstrap-roles ok\n") {
		t.Errorf("/readyz once the hook finished = %d %q", code, body)
	}
}

// TestPostStartHookBounded: a hook that does not finish in time fails the
// server with upstream's words; one cut short by the server stopping
// does not.
func TestPostStartHookBounded(t *testing.T) {
	blocked := func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }
	hook := &postStartHook{name: "rbac/bootstrap-roles", timeout: 10 * time.Millisecond, run: blocked}
	err := runHook(context.Background(), hook)
	if err == nil || !errors.Is(err, context.DeadlineExceeded) || !strings.HasPrefix(err.Error(), `PostStartHook "rbac/bootstrap-roles" failed: `) {
		t.Errorf("timed-out hook: %v", err)
	}
	if hook.done.Load() {
		t.Error("a failed hook counts as done")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := runHook(ctx, &postStartHook{name: "x", timeout: time.Minute, run: blocked}); err != nil {
		t.Errorf("hook stopped with the server: %v", err)
	}
}
