package metrics

import (
	"net/http"

	"k8s.io/component-base/metrics"

	"github.com/nodeagent/nodeagent/pkg/controlplane/apiserver/responsewriters"
)

// Path is where the server's own metrics are served.
const Path = "/metrics"

// Endpoint serves Path as kube-apiserver does: GET the metrics in the
// Prometheus formats, DELETE to reset them.
type Endpoint struct {
	handler   http.Handler
	authorize func(*http.Request) error
}

// NewEndpoint serves the registry's metrics to the requests authorize
// lets through (its error is the answer to the others).
func NewEndpoint(reg metrics.KubeRegistry, authorize func(*http.Request) error) *Endpoint {
	return &Endpoint{handler: metrics.HandlerWithReset(reg, metrics.HandlerOpts{}), authorize: authorize}
}

// Serve answers a request for Path; it reports whether the request was
// for it.
func (e *Endpoint) Serve(w http.ResponseWriter, r *http.Request) bool {
	if r.URL.Path != Path {
		return false
	}
	if err := e.authorize(r); err != nil {
		responsewriters.WriteError(w, err)
		return true
	}
	e.handler.ServeHTTP(w, r)
	return true
}
