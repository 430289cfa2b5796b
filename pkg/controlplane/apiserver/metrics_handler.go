package apiserver

import (
	"net/http"
	"strings"

	"k8s.io/component-base/metrics"

	"github.com/nodeagent/nodeagent/pkg/controlplane/apiserver/responsewriters"
)

// metricsPath is where the server's own metrics are served.
const metricsPath = "/metrics"

// serveMetrics answers /metrics as kube-apiserver does: GET the metrics in
// the Prometheus formats, DELETE to reset them. It reports whether the
// request was for /metrics.
func (s *Server) serveMetrics(w http.ResponseWriter, r *http.Request) bool {
	if r.URL.Path != metricsPath {
		return false
	}
	if err := s.authorizePath(r, nonResourceVerb(r.Method)); err != nil {
		responsewriters.WriteError(w, err)
		return true
	}
	s.metricsHandler.ServeHTTP(w, r)
	return true
}

// nonResourceVerb is the authorization verb of a non-resource request:
// the method in lower case.
func nonResourceVerb(method string) string {
	if method == http.MethodHead {
		return "get"
	}
	return strings.ToLower(method)
}

func newMetricsHandler(reg metrics.KubeRegistry) http.Handler {
	return metrics.HandlerWithReset(reg, metrics.HandlerOpts{})
}
