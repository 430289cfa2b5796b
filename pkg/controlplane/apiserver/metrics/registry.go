package metrics

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus/collectors"
	"k8s.io/component-base/metrics"
)

// requestDurationBuckets are upstream's, chosen for the API call latency
// SLOs.
var requestDurationBuckets = []float64{0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2, 3,
	4, 5, 6, 8, 10, 15, 20, 30, 45, 60}

// Requests are kube-apiserver's request metrics
// (k8s.io/apiserver/pkg/endpoints/metrics) under its names, labels,
// buckets and help texts.
type Requests struct {
	total        *metrics.CounterVec
	duration     *metrics.HistogramVec
	aborts       *metrics.CounterVec
	terminations *metrics.CounterVec
	refusals     *refusalLog // nil: not logged (LogRefusals)
}

// NewRequests makes the request metrics; Register adds them to a registry.
func NewRequests() *Requests {
	return &Requests{
		total: metrics.NewCounterVec(&metrics.CounterOpts{
			Subsystem:      "apiserver",
			Name:           "request_total",
			Help:           "Counter of apiserver requests broken out for each verb, dry run value, group, version, resource, scope, component, and HTTP response code.",
			StabilityLevel: metrics.STABLE,
		}, []string{"verb", "dry_run", "group", "version", "resource", "subresource", "scope", "component", "code"}),
		duration: metrics.NewHistogramVec(&metrics.HistogramOpts{
			Subsystem:      "apiserver",
			Name:           "request_duration_seconds",
			Help:           "Response latency distribution in seconds for each verb, dry run value, group, version, resource, subresource, scope and component.",
			Buckets:        requestDurationBuckets,
			StabilityLevel: metrics.STABLE,
		}, []string{"verb", "dry_run", "group", "version", "resource", "subresource", "scope", "component"}),
		aborts: metrics.NewCounterVec(&metrics.CounterOpts{
			Subsystem:      "apiserver",
			Name:           "request_aborts_total",
			Help:           "Number of requests which apiserver aborted possibly due to a timeout, for each group, version, verb, resource, subresource and scope",
			StabilityLevel: metrics.ALPHA,
		}, []string{"verb", "group", "version", "resource", "subresource", "scope"}),
		terminations: metrics.NewCounterVec(&metrics.CounterOpts{
			Subsystem:      "apiserver",
			Name:           "request_terminations_total",
			Help:           "Number of requests which apiserver terminated in self-defense.",
			StabilityLevel: metrics.ALPHA,
		}, []string{"verb", "group", "version", "resource", "subresource", "scope", "component", "code"}),
	}
}

// Register registers the metrics in r.
func (m *Requests) Register(r metrics.KubeRegistry) {
	r.MustRegister(m.total, m.duration, m.aborts, m.terminations)
}

// Abort records a request its handler aborted with http.ErrAbortHandler,
// as upstream's RecordRequestAbort.
func (m *Requests) Abort(l Labels) {
	m.aborts.WithLabelValues(l.Verb, l.Group, l.Version, l.Resource, l.Subresource, l.Scope).Inc()
}

// Labels are the labels of one request but its code.
type Labels struct {
	Verb, DryRun, Group, Version, Resource, Subresource, Scope, Component string
}

// Observe records one finished request.
func (m *Requests) Observe(l Labels, code int, d time.Duration) {
	m.total.WithLabelValues(l.Verb, l.DryRun, l.Group, l.Version, l.Resource, l.Subresource, l.Scope, l.Component, codeString(code)).Inc()
	m.duration.WithLabelValues(l.Verb, l.DryRun, l.Group, l.Version, l.Resource, l.Subresource, l.Scope, l.Component).Observe(d.Seconds())
}

// Dropped records a request the in-flight limit answered 429, as
// upstream's RecordDroppedRequest and RecordRequestTermination: in
// apiserver_request_total and apiserver_request_terminations_total, with
// no duration (it was not served), and in the log of refusals.
func (m *Requests) Dropped(r *http.Request, verb string, l Labels) {
	code := codeString(http.StatusTooManyRequests)
	m.total.WithLabelValues(l.Verb, l.DryRun, l.Group, l.Version, l.Resource, l.Subresource, l.Scope, l.Component, code).Inc()
	m.terminations.WithLabelValues(l.Verb, l.Group, l.Version, l.Resource, l.Subresource, l.Scope, l.Component, code).Inc()
	m.refusals.record(r, verb, http.StatusTooManyRequests)
}

// NewRegistry returns a registry holding what legacyregistry adds to
// kube-apiserver's /metrics: the process and Go runtime collectors, with
// all runtime/metrics. The API server's Config.Metrics takes it.
func NewRegistry() metrics.KubeRegistry {
	r := metrics.NewKubeRegistry()
	r.RawMustRegister(
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		collectors.NewGoCollector(collectors.WithGoCollectorRuntimeMetrics(collectors.MetricsAll)))
	return r
}
