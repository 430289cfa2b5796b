package nodeapi

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"time"

	v1 "k8s.io/api/core/v1"
	criv1 "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodeagent/nodeagent/pkg/crash"
	"github.com/nodeagent/nodeagent/pkg/podtrace"
	"github.com/nodeagent/nodeagent/pkg/runtime"
	"github.com/nodeagent/nodeagent/pkg/server"
)

// runtimeCallTimeout bounds each CRI call a request makes (not the
// streams and log follows themselves, which last as long as the client).
const runtimeCallTimeout = 30 * time.Second

// PodLister returns the pods the agent runs, with their status
// (podworker.Manager).
type PodLister interface {
	Pods() []*v1.Pod
}

// Runtime is what the node API asks the container runtime
// (*runtime.Client).
type Runtime interface {
	runtime.Streaming
	runtime.ContainerStatuser
	ListPodSandbox(ctx context.Context, filter *criv1.PodSandboxFilter) ([]*criv1.PodSandbox, error)
	ListContainers(ctx context.Context, filter *criv1.ContainerFilter) ([]*criv1.Container, error)
}

// Config holds the server's dependencies; all but Health, Configz and
// Logger are required.
type Config struct {
	// NodeName is the name authorization checks against (nodes/<name>).
	NodeName      string
	Pods          PodLister
	Runtime       Runtime
	Authenticator Authenticator
	Authorizer    Authorizer
	// Health reports the agent's health for /healthz.
	Health server.HealthChecker
	// Configz is served as {"kubeletconfig": Configz} on /configz.
	Configz any
	// Monitoring serves the metrics and stats endpoints; nil handlers
	// are not routed (404).
	Monitoring Monitoring
	// Traces, when set, serves the pods' start step logs on
	// /debug/pods/{namespace}/{pod}/trace.
	Traces Traces
	// Profiling serves Go's profiles under /debug/pprof/, as the kubelet's
	// enableProfilingHandler.
	Profiling bool
	Logger    *slog.Logger
}

// Monitoring are the handlers of the kubelet's metrics and stats paths,
// which authorization maps to nodes/metrics and nodes/stats.
type Monitoring struct {
	Metrics         http.Handler // /metrics
	ProbeMetrics    http.Handler // /metrics/probes
	ResourceMetrics http.Handler // /metrics/resource
	Summary         http.Handler // /stats/summary
}

// Server is the kubelet's authenticated API (port 10250).
type Server struct {
	cfg Config
	log *slog.Logger
	mux *http.ServeMux
}

// New checks cfg and registers the routes.
func New(cfg Config) (*Server, error) {
	if cfg.NodeName == "" || cfg.Pods == nil || cfg.Runtime == nil || cfg.Authenticator == nil || cfg.Authorizer == nil {
		return nil, errors.New("nodeapi: NodeName, Pods, Runtime, Authenticator and Authorizer are required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	s := &Server{cfg: cfg, log: cfg.Logger.With("component", "nodeapi"), mux: http.NewServeMux()}
	s.routes()
	return s, nil
}

// Handler serves the API behind authentication and authorization.
func (s *Server) Handler() http.Handler { return s.recovering("", s.withAuth(s.mux)) }

// recovering answers a panic in h with a 500 and logs it at error with the
// request and user, instead of letting net/http drop the connection.
func (s *Server) recovering(user string, h http.Handler) http.Handler {
	return crash.HTTP(crash.HTTPConfig{
		Component: "nodeapi",
		Logger:    s.log,
		Body:      http.StatusText(http.StatusInternalServerError),
		User:      func(*http.Request) string { return user },
	}, h)
}

func (s *Server) routes() {
	readOnly := server.Handler(s.cfg.Pods, s.cfg.Health)
	s.mux.Handle("GET /pods", readOnly)
	s.mux.Handle("GET /pods/", readOnly)
	s.mux.Handle("GET /healthz", readOnly)
	s.mux.HandleFunc("GET /runningpods/", s.runningPods)
	s.mux.HandleFunc("GET /configz", s.configz)
	s.mux.HandleFunc("GET /containerLogs/{namespace}/{pod}/{container}", s.containerLogs)
	if s.cfg.Traces != nil {
		s.mux.HandleFunc("GET "+podtrace.PathPattern, s.podTrace)
	}
	for path, h := range map[string]http.Handler{
		"/metrics": s.cfg.Monitoring.Metrics, "/metrics/probes": s.cfg.Monitoring.ProbeMetrics,
		"/metrics/resource": s.cfg.Monitoring.ResourceMetrics, "/stats/summary": s.cfg.Monitoring.Summary,
	} {
		if h != nil {
			s.mux.Handle("GET "+path, h)
		}
	}
	if s.cfg.Profiling {
		s.mux.HandleFunc("GET "+pprofPath, pprofHandler)
	}
	for _, m := range []string{http.MethodGet, http.MethodPost} {
		s.mux.HandleFunc(m+" /exec/{namespace}/{pod}/{container}", s.exec)
		s.mux.HandleFunc(m+" /exec/{namespace}/{pod}/{uid}/{container}", s.exec)
		s.mux.HandleFunc(m+" /attach/{namespace}/{pod}/{container}", s.attach)
		s.mux.HandleFunc(m+" /attach/{namespace}/{pod}/{uid}/{container}", s.attach)
		s.mux.HandleFunc(m+" /portForward/{namespace}/{pod}", s.portForward)
		s.mux.HandleFunc(m+" /portForward/{namespace}/{pod}/{uid}", s.portForward)
	}
}
