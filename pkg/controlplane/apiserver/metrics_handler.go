package apiserver

import (
	"fmt"
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/nodeagent/nodeagent/pkg/controlplane/apiserver/request"
)

// monitoringGroup may read /metrics, as upstream's system:monitoring
// cluster role binding lets it.
const monitoringGroup = "system:monitoring"

// authorizeMetrics is the /metrics endpoint's authorization: the user's
// refusal, if any.
func authorizeMetrics(r *http.Request) error {
	if u, ok := request.UserFrom(r.Context()); ok && !mayUseMetrics(u, r.Method) {
		return forbiddenPath(u, nonResourceVerb(r.Method), r.URL.Path)
	}
	return nil
}

// InstrumentPath records the requests of a non-resource path (the health
// checks) in the server's request metrics, as upstream's healthz
// handlers do.
func (s *Server) InstrumentPath(path string, h http.Handler) http.Handler {
	return s.requests.InstrumentPath(path, h)
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
