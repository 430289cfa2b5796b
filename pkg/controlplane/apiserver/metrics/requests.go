package metrics

import (
	"bufio"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/nodeagent/nodeagent/pkg/controlplane/apiserver/request"
)

// apiServerComponent is the component label of API requests.
const apiServerComponent = "apiserver"

// connectSubresources are reported with the verb CONNECT, as upstream's
// validConnectRequests.
var connectSubresources = map[string]bool{"log": true, "exec": true, "portforward": true, "attach": true, "proxy": true}

// reportedMethods are the verbs upstream reports; any other is "other".
var reportedMethods = map[string]bool{
	"APPLY": true, "CONNECT": true, "CREATE": true, "DELETE": true, "DELETECOLLECTION": true, "GET": true, "LIST": true,
	"PATCH": true, "POST": true, "PROXY": true, "PUT": true, "UPDATE": true, "WATCH": true, "WATCHLIST": true,
}

// Instrument serves a resource request through serve and records it in
// apiserver_request_total and apiserver_request_duration_seconds, with
// upstream's labels; namespaced is whether the resource is. The core
// instruments requests refused by authorization too.
func (m *Requests) Instrument(w http.ResponseWriter, r *http.Request, namespaced bool, ri request.Info, serve func(http.ResponseWriter)) {
	begin := time.Now()
	sw := &statusWriter{ResponseWriter: w}
	var out http.ResponseWriter = sw
	if _, ok := w.(http.Hijacker); ok {
		out = hijackWriter{sw}
	}
	defer func() {
		code := sw.code()
		m.Observe(ResourceLabels(r, namespaced, ri), code, time.Since(begin))
		m.refusals.record(r, ri.Verb, code)
	}()
	serve(out)
}

// ResourceLabels computes the labels as upstream's installer and
// MonitorRequest do; namespaced is whether the resource is.
func ResourceLabels(r *http.Request, namespaced bool, ri request.Info) Labels {
	scope := metricsScope(namespaced, ri)
	return Labels{
		Verb: metricsVerb(r, ri, scope), DryRun: cleanDryRun(r), Group: ri.Group, Version: ri.Version,
		Resource: ri.Resource, Subresource: ri.Subresource, Scope: scope, Component: apiServerComponent,
	}
}

// PathLabels are the labels of a request for a path that is not a
// resource, as upstream's RecordDroppedRequest gives them: the path as
// subresource, no scope.
func PathLabels(r *http.Request) Labels {
	verb := strings.ToUpper(r.Method)
	switch {
	case verb == http.MethodHead:
		verb = http.MethodGet
	case !reportedMethods[verb]:
		verb = "other"
	}
	return Labels{Verb: verb, DryRun: cleanDryRun(r), Subresource: r.URL.Path, Component: apiServerComponent}
}

// metricsScope is the installer's requestScope: "resource" for a named
// object or a create, "namespace" for a collection in one namespace,
// "cluster" for the others.
func metricsScope(namespaced bool, ri request.Info) string {
	switch {
	case ri.Name != "" || ri.Verb == "create":
		return "resource"
	case namespaced && ri.Namespace != "":
		return "namespace"
	}
	return "cluster"
}

// metricsVerb is the request's method, with upstream's refinements: LIST
// for reads of collections, WATCH, APPLY for server-side apply patches,
// CONNECT for the streaming and proxy subresources.
func metricsVerb(r *http.Request, ri request.Info, scope string) string {
	verb := strings.ToUpper(r.Method)
	switch {
	case connectSubresources[ri.Subresource]:
		return "CONNECT"
	case ri.Verb == "watch":
		return "WATCH"
	case (verb == http.MethodGet || verb == http.MethodHead) && scope != "resource":
		return "LIST"
	case verb == http.MethodHead:
		return "GET"
	case verb == http.MethodPatch && r.Header.Get("Content-Type") == string(types.ApplyPatchType):
		return "APPLY"
	case reportedMethods[verb]:
		return verb
	}
	return "other"
}

// cleanDryRun is upstream's dry_run label: the sorted, deduplicated
// dryRun values, "invalid" unless each is "All".
func cleanDryRun(r *http.Request) string {
	if !strings.Contains(r.URL.RawQuery, "dryRun") {
		return ""
	}
	values := slices.Clone(r.URL.Query()["dryRun"])
	for _, v := range values {
		if v != "All" {
			return "invalid"
		}
	}
	slices.Sort(values)
	return strings.Join(slices.Compact(values), ",")
}

// codeString is the code label.
func codeString(code int) string { return strconv.Itoa(code) }

// statusWriter remembers the response code. It flushes (watches,
// streamed logs) and unwraps for http.ResponseController.
type statusWriter struct {
	http.ResponseWriter
	status   int
	hijacked bool
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 && (code >= http.StatusOK || code == http.StatusSwitchingProtocols) {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Flush() {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// code is the status sent: 101 for a connection taken over by an upgrade
// (whose answer the proxy writes on the raw connection), 200 when the
// handler wrote nothing.
func (w *statusWriter) code() int {
	switch {
	case w.status != 0:
		return w.status
	case w.hijacked:
		return http.StatusSwitchingProtocols
	}
	return http.StatusOK
}

// hijackWriter is a statusWriter over a connection that can be taken
// over (HTTP/1.1): exec, attach, port-forward and proxied upgrades.
type hijackWriter struct{ *statusWriter }

func (w hijackWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	w.hijacked = true
	return w.ResponseWriter.(http.Hijacker).Hijack()
}

// InstrumentPath records the requests of a non-resource path (the health
// checks) as upstream's healthz handlers do: verb GET, the path as
// subresource, the other labels empty.
func (m *Requests) InstrumentPath(path string, h http.Handler) http.Handler {
	labels := Labels{Verb: "GET", Subresource: path}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		begin := time.Now()
		sw := &statusWriter{ResponseWriter: w}
		defer func() { m.Observe(labels, sw.code(), time.Since(begin)) }()
		h.ServeHTTP(sw, r)
	})
}
