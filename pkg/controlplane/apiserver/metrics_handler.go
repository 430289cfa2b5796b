package apiserver

import (
	"fmt"
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/component-base/metrics"

	"github.com/nodeagent/nodeagent/pkg/controlplane/apiserver/request"
	"github.com/nodeagent/nodeagent/pkg/controlplane/apiserver/responsewriters"
)

// monitoringGroup may read /metrics, as upstream's system:monitoring
// cluster role binding lets it.
const monitoringGroup = "system:monitoring"

// metricsPath is where the server's own metrics are served.
const metricsPath = "/metrics"

// serveMetrics answers /metrics as kube-apiserver does: GET the metrics in
// the Prometheus formats, DELETE to reset them. It reports whether the
// request was for /metrics.
func (s *Server) serveMetrics(w http.ResponseWriter, r *http.Request) bool {
	if r.URL.Path != metricsPath {
		return false
	}
	if u, ok := request.UserFrom(r.Context()); ok && !mayUseMetrics(u, r.Method) {
		responsewriters.WriteError(w, forbiddenPath(u, nonResourceVerb(r.Method), r.URL.Path))
		return true
	}
	s.metricsHandler.ServeHTTP(w, r)
	return true
}

// mayUseMetrics: the admin may do anything, monitoring only read.
func mayUseMetrics(u request.User, method string) bool {
	return isMaster(u) || (hasGroup(u, monitoringGroup) && (method == http.MethodGet || method == http.MethodHead))
}

// nonResourceVerb is the authorization verb of a non-resource request:
// the method in lower case.
func nonResourceVerb(method string) string {
	if method == http.MethodHead {
		return "get"
	}
	return strings.ToLower(method)
}

// forbiddenPath is upstream's refusal of a non-resource URL.
func forbiddenPath(u request.User, verb, path string) error {
	return apierrors.NewForbidden(schema.GroupResource{}, "", fmt.Errorf("User %q cannot %s path %q", u.Name, verb, path))
}

func newMetricsHandler(reg metrics.KubeRegistry) http.Handler {
	return metrics.HandlerWithReset(reg, metrics.HandlerOpts{})
}
