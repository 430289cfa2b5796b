package nodeapi

import (
	"net/http"
	"net/http/pprof"
	"strings"
)

// pprofPath is where the kubelet serves Go's profiles; authorization maps
// it to nodes/proxy like every path without a subresource of its own.
const pprofPath = "/debug/pprof/"

// pprofHandler routes as the kubelet's profiling handler: the four
// handlers net/http/pprof has by name, and the index (which also serves
// the named runtime profiles: heap, goroutine, block, ...) for the rest.
func pprofHandler(w http.ResponseWriter, r *http.Request) {
	switch strings.TrimPrefix(r.URL.Path, pprofPath) {
	case "profile":
		pprof.Profile(w, r)
	case "symbol":
		pprof.Symbol(w, r)
	case "cmdline":
		pprof.Cmdline(w, r)
	case "trace":
		pprof.Trace(w, r)
	default:
		pprof.Index(w, r)
	}
}
