package apiserver

import (
	"time"

	"github.com/prometheus/client_golang/prometheus/collectors"
	"k8s.io/component-base/metrics"
)

// requestDurationBuckets are upstream's, chosen for the API call latency
// SLOs.
var requestDurationBuckets = []float64{0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2, 3,
	4, 5, 6, 8, 10, 15, 20, 30, 45, 60}

// requestMetrics are kube-apiserver's request metrics
// (k8s.io/apiserver/pkg/endpoints/metrics) under its names, labels,
// buckets and help texts.
type requestMetrics struct {
	total    *metrics.CounterVec
	duration *metrics.HistogramVec
}

func newRequestMetrics() *requestMetrics {
	return &requestMetrics{
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
	}
}

func (m *requestMetrics) register(r metrics.KubeRegistry) {
	r.MustRegister(m.total, m.duration)
}

// requestLabels are the labels of one request but its code.
type requestLabels struct {
	verb, dryRun, group, version, resource, subresource, scope, component string
}

// observe records one finished request.
func (m *requestMetrics) observe(l requestLabels, code int, d time.Duration) {
	m.total.WithLabelValues(l.verb, l.dryRun, l.group, l.version, l.resource, l.subresource, l.scope, l.component, codeString(code)).Inc()
	m.duration.WithLabelValues(l.verb, l.dryRun, l.group, l.version, l.resource, l.subresource, l.scope, l.component).Observe(d.Seconds())
}

// NewMetricsRegistry returns a registry holding what legacyregistry adds
// to kube-apiserver's /metrics: the process and Go runtime collectors,
// with all runtime/metrics. Config.Metrics takes it.
func NewMetricsRegistry() metrics.KubeRegistry {
	r := metrics.NewKubeRegistry()
	r.RawMustRegister(
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		collectors.NewGoCollector(collectors.WithGoCollectorRuntimeMetrics(collectors.MetricsAll)))
	return r
}
