package server

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
)

// healthChecks serves /healthz, /livez and /readyz to anyone, as
// kube-apiserver does for probes. Readiness needs the components to have
// come up and etcd to answer now.
type healthChecks struct {
	ready      atomic.Bool
	etcdHealth func(context.Context) error
	// instrument, when set, records each path's requests in the API
	// server's request metrics.
	instrument func(path string, h http.Handler) http.Handler
	// hooks are the post-start hooks readiness waits for; set before
	// serving.
	hooks []*postStartHook
}

type check struct {
	name string
	err  error
}

func (h *healthChecks) register(mux *http.ServeMux) {
	for path, readiness := range map[string]bool{"/healthz": false, "/livez": false, "/readyz": true} {
		var handler http.Handler = h.serve(readiness)
		if h.instrument != nil {
			handler = h.instrument(path, handler)
		}
		mux.Handle(path, handler)
	}
}

func (h *healthChecks) serve(readiness bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		checks := []check{{name: "ping"}}
		if readiness {
			var startErr error
			if !h.ready.Load() {
				startErr = fmt.Errorf("not started")
			}
			checks = append(checks, check{name: "poststarthook/components-ready", err: startErr})
			for _, hook := range h.hooks {
				checks = append(checks, hook.check())
			}
			checks = append(checks, check{name: "etcd", err: h.etcdHealth(r.Context())})
		}
		failed := false
		var b strings.Builder
		for _, c := range checks {
			if c.err != nil {
				failed = true
				fmt.Fprintf(&b, "[-]%s failed: reason withheld\n", c.name)
			} else {
				fmt.Fprintf(&b, "[+]%s ok\n", c.name)
			}
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		path := strings.TrimPrefix(r.URL.Path, "/")
		switch {
		case failed:
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintf(w, "%s%s check failed\n", b.String(), path)
		case r.URL.Query().Has("verbose"):
			fmt.Fprintf(w, "%s%s check passed\n", b.String(), path)
		default:
			fmt.Fprint(w, "ok")
		}
	}
}
