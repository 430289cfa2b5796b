package apiserver

import (
	"net/http"
	"strings"

	apimetrics "github.com/nodeagent/nodeagent/pkg/controlplane/apiserver/metrics"
)

// authorizeMetrics is the /metrics endpoint's authorization (through the
// authorizer chain, as a non-resource path): the user's refusal, if any.
func (s *Server) authorizeMetrics(r *http.Request) error {
	return s.authorizePath(r, nonResourceVerb(r.Method))
}

// InstrumentPath records the requests of a non-resource path (the health
// checks) in the server's request metrics, as upstream's healthz
// handlers do.
func (s *Server) InstrumentPath(path string, h http.Handler) http.Handler {
	return s.requests.InstrumentPath(path, h)
}

// nonResourceVerb is the authorization verb of a non-resource request:
// the method in lower case.
func nonResourceVerb(method string) string {
	if method == http.MethodHead {
		return "get"
	}
	return strings.ToLower(method)
}

// RecordTooManyRequests records a request the in-flight limit refused
// (inflight.Config.OnReject): it never reached the handler that
// instruments the others.
func (s *Server) RecordTooManyRequests(r *http.Request) {
	ri, ok := parseRequest(r)
	if !ok {
		s.requests.Dropped(r, strings.ToLower(r.Method), apimetrics.PathLabels(r))
		return
	}
	namespaced := false
	if res := s.resources[resourceKey(ri.Group, ri.Version, ri.Resource)]; res != nil {
		namespaced = res.Namespaced
	}
	s.requests.Dropped(r, ri.Verb, apimetrics.ResourceLabels(r, namespaced, ri))
}
