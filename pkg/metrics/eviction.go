package metrics

import (
	"time"

	"k8s.io/component-base/metrics"
)

// Eviction is the eviction manager's metrics, upstream's names and help
// texts (pkg/kubelet/metrics): kubelet_evictions and
// kubelet_eviction_stats_age_seconds, by eviction_signal.
type Eviction struct {
	evictions *metrics.CounterVec
	statsAge  *metrics.HistogramVec
}

// NewEviction registers the eviction metrics on m's /metrics.
func NewEviction(m *Metrics) (*Eviction, error) {
	e := &Eviction{
		evictions: counterVec("evictions", "Cumulative number of pod evictions by eviction signal", "eviction_signal"),
		statsAge: histogramVec("eviction_stats_age_seconds",
			"Time between when stats are collected, and when pod is evicted based on those stats by eviction signal",
			metrics.DefBuckets, "eviction_signal"),
	}
	for _, c := range []metrics.Registerable{e.evictions, e.statsAge} {
		if err := m.Register(c); err != nil {
			return nil, err
		}
	}
	return e, nil
}

// PodEvicted counts one eviction.
func (e *Eviction) PodEvicted(signal string) { e.evictions.WithLabelValues(signal).Inc() }

// StatsAge observes how old the stats an eviction acted on were.
func (e *Eviction) StatsAge(signal string, age time.Duration) {
	e.statsAge.WithLabelValues(signal).Observe(age.Seconds())
}
