package apiserver

import (
	"net/http"

	"github.com/nodeagent/nodeagent/pkg/controlplane/apiserver/metrics"
	"github.com/nodeagent/nodeagent/pkg/controlplane/apiserver/request"
	"github.com/nodeagent/nodeagent/pkg/crash"
)

// panicComponent is the component label of the API server's recovered
// panics.
const panicComponent = "apiserver"

// recovering is upstream's WithPanicRecovery around the whole API
// (discovery, OpenAPI, /metrics and the resources).
func (s *Server) recovering(h http.Handler) http.Handler {
	return crash.HTTP(crash.HTTPConfig{Component: panicComponent, Logger: s.cfg.Logger, User: userName}, h)
}

// serveRecovered serves one resource request inside Instrument, so that
// a panic is recorded in apiserver_request_total with its 500 and an
// abort in apiserver_request_aborts_total with the request's labels.
func (s *Server) serveRecovered(w http.ResponseWriter, r *http.Request, labels metrics.Labels, serve func(http.ResponseWriter, *http.Request)) {
	crash.HTTP(crash.HTTPConfig{
		Component: panicComponent,
		Logger:    s.cfg.Logger,
		User:      userName,
		OnAbort:   func(*http.Request) { s.requests.Abort(labels) },
	}, http.HandlerFunc(serve)).ServeHTTP(w, r)
}

// userName is the authenticated user of r, for the panic log.
func userName(r *http.Request) string {
	if u, ok := request.UserFrom(r.Context()); ok {
		return u.Name
	}
	return ""
}
