package nodeapi

import (
	"fmt"
	"net/http"

	"k8s.io/apimachinery/pkg/types"

	"github.com/nodeagent/nodeagent/pkg/podtrace"
)

// Traces are the agent's pod start step logs (*podtrace.Log).
type Traces interface {
	Get(namespace, name string, uid types.UID) (podtrace.Trace, bool)
}

// podTrace serves one pod's step log as JSON (?uid= picks one pod of
// that name). The path has no subresource of its own, so authorization
// asks for nodes/proxy, as upstream does for every such path (/debug/pprof
// among them).
func (s *Server) podTrace(w http.ResponseWriter, r *http.Request) {
	ns, name := r.PathValue("namespace"), r.PathValue("pod")
	t, ok := s.cfg.Traces.Get(ns, name, types.UID(r.URL.Query().Get("uid")))
	if !ok {
		http.Error(w, fmt.Sprintf("no trace of pod %s/%s on this node", ns, name), http.StatusNotFound)
		return
	}
	writeJSON(w, t)
}
