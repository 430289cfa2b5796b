package nodeapi

import (
	"net/http"
	"strings"
	"testing"
)

func TestProfilingHandler(t *testing.T) {
	for _, on := range []bool{true, false} {
		s, err := New(Config{
			NodeName: "node1", Pods: podList{}, Runtime: &fakeRuntime{},
			Authenticator: NewAuthenticator(AuthnConfig{Anonymous: true}),
			Authorizer:    AlwaysAllow(), Profiling: on, Logger: quietLogger(),
		})
		if err != nil {
			t.Fatal(err)
		}
		for _, path := range []string{"/debug/pprof/", "/debug/pprof/goroutine?debug=1", "/debug/pprof/cmdline"} {
			rec := get(t, s.Handler(), path)
			switch {
			case on && rec.Code != http.StatusOK:
				t.Errorf("profiling on: %s answered %d: %s", path, rec.Code, rec.Body)
			case !on && rec.Code != http.StatusNotFound:
				t.Errorf("profiling off: %s answered %d, want 404", path, rec.Code)
			}
		}
		if rec := get(t, s.Handler(), "/debug/pprof/goroutine?debug=1"); on && !strings.Contains(rec.Body.String(), "goroutine profile:") {
			t.Errorf("goroutine profile body: %.200s", rec.Body)
		}
	}
}
