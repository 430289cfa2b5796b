package metrics

import (
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/component-base/metrics"
)

// proberMetrics are served on /metrics/probes, as upstream.
type proberMetrics struct {
	results  *metrics.CounterVec
	duration *metrics.HistogramVec
}

// Upstream's result label values.
const (
	ProbeSuccessful = "successful"
	ProbeFailed     = "failed"
	ProbeUnknown    = "unknown"
)

func newProberMetrics() *proberMetrics {
	return &proberMetrics{
		results: metrics.NewCounterVec(&metrics.CounterOpts{
			Subsystem:      "prober",
			Name:           "probe_total",
			Help:           "Cumulative number of a liveness, readiness or startup probe for a container by result.",
			StabilityLevel: metrics.BETA,
		}, []string{"probe_type", "result", "container", "pod", "namespace", "pod_uid"}),
		// Upstream gives no buckets: the Prometheus defaults.
		duration: metrics.NewHistogramVec(&metrics.HistogramOpts{
			Subsystem:      "prober",
			Name:           "probe_duration_seconds",
			Help:           "Duration in seconds for a probe response.",
			StabilityLevel: metrics.ALPHA,
		}, []string{"probe_type", "container", "pod", "namespace"}),
	}
}

// ProbeRun counts one probe of a container (probeType is Liveness,
// Readiness or Startup; result one of ProbeSuccessful, ProbeFailed,
// ProbeUnknown). As upstream, the duration of failed probes is not
// observed: a failure usually is a timeout, which would only measure the
// probe's timeoutSeconds.
func (m *Metrics) ProbeRun(probeType, result string, pod *v1.Pod, container string, d time.Duration) {
	m.prober.results.WithLabelValues(probeType, result, container, pod.Name, pod.Namespace, string(pod.UID)).Inc()
	if result != ProbeFailed {
		m.prober.duration.WithLabelValues(probeType, container, pod.Name, pod.Namespace).Observe(d.Seconds())
	}
}

// ProbeWorkerDone drops the series of a probe that no longer runs, so
// that deleted pods do not linger on /metrics/probes.
func (m *Metrics) ProbeWorkerDone(probeType string, pod *v1.Pod, container string) {
	for _, result := range []string{ProbeSuccessful, ProbeFailed, ProbeUnknown} {
		m.prober.results.Delete(metrics.Labels{"probe_type": probeType, "result": result,
			"container": container, "pod": pod.Name, "namespace": pod.Namespace, "pod_uid": string(pod.UID)})
	}
	m.prober.duration.Delete(metrics.Labels{"probe_type": probeType, "container": container,
		"pod": pod.Name, "namespace": pod.Namespace})
}
