package crash

import (
	"bufio"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"runtime/debug"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/tools/cache"
	"k8s.io/component-base/metrics"
)

// Kinds of recovered panics (the kind label).
const (
	KindHTTP     = "http"
	KindCallback = "callback"
)

// PanicMessage is the body of the 500 upstream's WithPanicRecovery
// answers (k8s.io/apiserver/pkg/server/filters/wrap.go).
const PanicMessage = "This request caused apiserver to panic. Look in the logs for details."

// panics is process-wide: the components of one process share it, as
// client-go's and the API server's metrics are process-wide.
var panics = metrics.NewCounterVec(&metrics.CounterOpts{
	Namespace:      "nodeagent",
	Name:           "recovered_panics_total",
	Help:           "Number of panics recovered in HTTP handlers (kind http) and in informer callbacks and controller work items (kind callback), by component.",
	StabilityLevel: metrics.ALPHA,
}, []string{"component", "kind"})

// Register adds the recovered panics counter to r; registering it in
// several registries is fine.
func Register(r metrics.KubeRegistry) error { return r.Register(panics) }

// Count records one recovered panic.
func Count(component, kind string) { panics.WithLabelValues(component, kind).Inc() }

// HTTPConfig says how HTTP reports a panic.
type HTTPConfig struct {
	Component string
	Logger    *slog.Logger
	// Body is the 500's body (default PanicMessage).
	Body string
	// User names the request's user for the log; nil logs none.
	User func(*http.Request) string
	// OnAbort, if set, is called for an http.ErrAbortHandler panic before
	// it is passed on (upstream records apiserver_request_aborts_total).
	OnAbort func(*http.Request)
}

// HTTP returns h with its panics recovered as the package doc says.
func HTTP(cfg HTTPConfig, h http.Handler) http.Handler {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Body == "" {
		cfg.Body = PanicMessage
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tw := &trackingWriter{ResponseWriter: w}
		var out http.ResponseWriter = tw
		if _, ok := w.(http.Hijacker); ok {
			out = hijackingWriter{tw}
		}
		defer func() {
			v := recover()
			if v == nil {
				return
			}
			if v == http.ErrAbortHandler {
				if cfg.OnAbort != nil {
					cfg.OnAbort(r)
				}
				panic(v)
			}
			Count(cfg.Component, KindHTTP)
			args := []any{"method", r.Method, "path", r.URL.RequestURI(), "panic", fmt.Sprint(v), "stack", string(debug.Stack())}
			if cfg.User != nil {
				args = append(args, "user", cfg.User(r))
			}
			cfg.Logger.Error("handler panicked", args...)
			if !tw.wrote {
				http.Error(w, cfg.Body, http.StatusInternalServerError)
				return
			}
			// The response has begun: only an aborted connection tells
			// the client it is incomplete.
			panic(http.ErrAbortHandler)
		}()
		h.ServeHTTP(out, r)
	})
}

// trackingWriter remembers whether the response has begun.
type trackingWriter struct {
	http.ResponseWriter
	wrote bool
}

func (w *trackingWriter) WriteHeader(code int) {
	if code >= http.StatusOK || code == http.StatusSwitchingProtocols {
		w.wrote = true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *trackingWriter) Write(b []byte) (int, error) {
	w.wrote = true
	return w.ResponseWriter.Write(b)
}

func (w *trackingWriter) Flush() {
	w.wrote = true
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// hijackingWriter is a trackingWriter over a connection that can be
// taken over (exec, attach, port-forward and proxied upgrades, which find
// it by type assertion); once taken over, no 500 can be written.
type hijackingWriter struct{ *trackingWriter }

func (w hijackingWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	w.wrote = true
	return w.ResponseWriter.(http.Hijacker).Hijack()
}

// Unwrap lets http.ResponseController reach the connection (hijacking
// for exec and port-forward, deadlines for streams).
func (w *trackingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Do runs fn and recovers a panic in it, which it logs at error with
// what (the key or object) and counts; it reports whether fn panicked.
func Do(log *slog.Logger, component, what string, fn func()) (panicked bool) {
	defer func() {
		if v := recover(); v != nil {
			panicked = true
			Count(component, KindCallback)
			log.Error("callback panicked", "component", component, "object", what, "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
		}
	}()
	fn()
	return false
}

// EventHandler returns h with each callback guarded by Do: a panic skips
// that one notification.
func EventHandler(log *slog.Logger, component string, h cache.ResourceEventHandler) cache.ResourceEventHandler {
	return guardedHandler{log: log, component: component, h: h}
}

type guardedHandler struct {
	log       *slog.Logger
	component string
	h         cache.ResourceEventHandler
}

func (g guardedHandler) OnAdd(obj any, initial bool) {
	Do(g.log, g.component, "add "+describe(obj), func() { g.h.OnAdd(obj, initial) })
}

func (g guardedHandler) OnUpdate(oldObj, newObj any) {
	Do(g.log, g.component, "update "+describe(newObj), func() { g.h.OnUpdate(oldObj, newObj) })
}

func (g guardedHandler) OnDelete(obj any) {
	Do(g.log, g.component, "delete "+describe(obj), func() { g.h.OnDelete(obj) })
}

// describe names an object as "<type> <namespace>/<name>".
func describe(obj any) string {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		return describe(t.Obj)
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return fmt.Sprintf("%T", obj)
	}
	if m.GetNamespace() == "" {
		return fmt.Sprintf("%T %s", obj, m.GetName())
	}
	return fmt.Sprintf("%T %s/%s", obj, m.GetNamespace(), m.GetName())
}
