package metrics

import (
	"bytes"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/nodeagent/nodeagent/pkg/controlplane/apiserver/request"
)

func TestRefusalLog(t *testing.T) {
	var buf bytes.Buffer
	now := time.Unix(1000, 0)
	l := &refusalLog{log: slog.New(slog.NewTextHandler(&buf, nil)), now: func() time.Time { return now }}
	r := httptest.NewRequest(http.MethodGet, "/api/v1/secrets", nil)
	r = r.WithContext(request.WithUser(r.Context(), request.User{Name: "alice", Groups: []string{"system:authenticated"}}))

	for _, code := range []int{http.StatusOK, http.StatusNotFound, http.StatusConflict, http.StatusUnauthorized} {
		l.record(r, "list", code)
	}
	if buf.Len() != 0 {
		t.Errorf("answers that are not refusals logged: %s", buf.String())
	}
	l.record(r, "list", http.StatusForbidden)
	for _, want := range []string{"level=INFO", `msg="request refused"`, "code=403", "verb=list", "path=/api/v1/secrets", "user=alice", "groups=[system:authenticated]"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("log %q lacks %s", buf.String(), want)
		}
	}
	buf.Reset()
	l.record(r, "create", http.StatusRequestEntityTooLarge)
	l.record(r, "list", http.StatusTooManyRequests)
	if got := buf.String(); strings.Count(got, "level=WARN") != 2 || !strings.Contains(got, "code=413") || !strings.Contains(got, "code=429") {
		t.Errorf("413 and 429: %q, want two warnings", got)
	}

	// A flood: refusalBurst lines a second, the rest counted in the next.
	buf.Reset()
	now = now.Add(time.Second)
	for range refusalBurst + 5 {
		l.record(r, "list", http.StatusForbidden)
	}
	if n := strings.Count(buf.String(), "\n"); n != refusalBurst {
		t.Errorf("%d lines in one second, want %d", n, refusalBurst)
	}
	buf.Reset()
	now = now.Add(time.Second)
	l.record(r, "list", http.StatusForbidden)
	if got := buf.String(); strings.Count(got, "\n") != 1 || !strings.Contains(got, "refusalsNotLogged=5") {
		t.Errorf("next second: %q, want one line with refusalsNotLogged=5", got)
	}
	// Not logged at all: a nil log (LogRefusals not called).
	var none *refusalLog
	none.record(r, "list", http.StatusForbidden)
}

func TestPathLabels(t *testing.T) {
	for _, tc := range []struct {
		method, target string
		want           Labels
	}{
		{"GET", "/version", Labels{Verb: "GET", Subresource: "/version", Component: "apiserver"}},
		{"HEAD", "/healthz", Labels{Verb: "GET", Subresource: "/healthz", Component: "apiserver"}},
		{"POST", "/apis/x/v1?dryRun=All", Labels{Verb: "POST", DryRun: "All", Subresource: "/apis/x/v1", Component: "apiserver"}},
		{"BREW", "/coffee", Labels{Verb: "other", Subresource: "/coffee", Component: "apiserver"}},
	} {
		if got := PathLabels(httptest.NewRequest(tc.method, tc.target, nil)); got != tc.want {
			t.Errorf("%s %s: %+v, want %+v", tc.method, tc.target, got, tc.want)
		}
	}
}
