package apiserver

import (
	"net/http"
	"strings"
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
