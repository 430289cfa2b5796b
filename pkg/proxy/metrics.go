package proxy

import (
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/component-base/metrics"
)

// metricsSubsystem prefixes kube-proxy's metrics.
const metricsSubsystem = "kubeproxy"

// ipFamily is the value of the ip_family label kube-proxy gives its
// metrics; the proxy handles IPv4 only.
var ipFamily = string(v1.IPv4Protocol)

// kube-proxy's buckets (pkg/proxy/metrics).
var (
	syncDurationBuckets       = metrics.ExponentialBuckets(0.001, 2, 15)
	networkProgrammingBuckets = metrics.MergeBuckets(
		metrics.LinearBuckets(0.25, 0.25, 2), // 0.25s, 0.50s
		metrics.LinearBuckets(1, 1, 59),      // 1s, 2s, 3s, ... 59s
		metrics.LinearBuckets(60, 5, 12),     // 60s, 65s, 70s, ... 115s
		metrics.LinearBuckets(120, 30, 7),    // 2min, 2.5min, 3min, ..., 5min
	)
)

// Metrics are the proxy's Prometheus metrics, under kube-proxy's names,
// types, buckets, labels and help texts, so that dashboards and alerts
// written for kube-proxy in nftables mode work unchanged. Create them with
// NewMetrics, register them with Register and hand them to the Proxier in
// Config.Metrics. A nil *Metrics records nothing.
type Metrics struct {
	syncDuration        *metrics.HistogramVec
	fullSyncDuration    *metrics.HistogramVec
	partialSyncDuration *metrics.HistogramVec
	lastSync            *metrics.GaugeVec
	syncFailures        *metrics.CounterVec
	cleanupFailures     *metrics.CounterVec
	networkProgramming  *metrics.HistogramVec
}

func histogramVec(name, help string, buckets []float64) *metrics.HistogramVec {
	return metrics.NewHistogramVec(&metrics.HistogramOpts{
		Subsystem: metricsSubsystem, Name: name, Help: help, Buckets: buckets, StabilityLevel: metrics.ALPHA,
	}, []string{"ip_family"})
}

func counterVec(name, help string) *metrics.CounterVec {
	return metrics.NewCounterVec(&metrics.CounterOpts{
		Subsystem: metricsSubsystem, Name: name, Help: help, StabilityLevel: metrics.ALPHA,
	}, []string{"ip_family"})
}

// NewMetrics creates the metrics, unregistered. The help texts are
// kube-proxy's word for word.
func NewMetrics() *Metrics {
	return &Metrics{
		syncDuration: histogramVec("sync_proxy_rules_duration_seconds",
			"SyncProxyRules latency in seconds", syncDurationBuckets),
		fullSyncDuration: histogramVec("sync_full_proxy_rules_duration_seconds",
			"SyncProxyRules latency in seconds for full resyncs", syncDurationBuckets),
		partialSyncDuration: histogramVec("sync_partial_proxy_rules_duration_seconds",
			"SyncProxyRules latency in seconds for partial resyncs", syncDurationBuckets),
		lastSync: metrics.NewGaugeVec(&metrics.GaugeOpts{
			Subsystem: metricsSubsystem, Name: "sync_proxy_rules_last_timestamp_seconds",
			Help: "The last time proxy rules were successfully synced", StabilityLevel: metrics.ALPHA,
		}, []string{"ip_family"}),
		syncFailures: counterVec("sync_proxy_rules_nftables_sync_failures_total",
			"Cumulative proxy nftables sync failures"),
		cleanupFailures: counterVec("sync_proxy_rules_nftables_cleanup_failures_total",
			"Cumulative proxy nftables cleanup failures"),
		networkProgramming: histogramVec("network_programming_duration_seconds",
			"In Cluster Network Programming Latency in seconds", networkProgrammingBuckets),
	}
}

// Registerer takes collectors: a component-base KubeRegistry, or the
// agent's metrics (package metrics), whose /metrics then shows them.
type Registerer interface {
	Register(metrics.Registerable) error
}

// Register registers every metric with r, and creates its series, so
// that /metrics shows them (the counters at 0) before the first sync.
func (m *Metrics) Register(r Registerer) error {
	for _, c := range []metrics.Registerable{m.syncDuration, m.fullSyncDuration, m.partialSyncDuration,
		m.lastSync, m.syncFailures, m.cleanupFailures, m.networkProgramming} {
		if err := r.Register(c); err != nil {
			return fmt.Errorf("register %s: %w", c.FQName(), err)
		}
	}
	// Series of unregistered metrics are no-ops: only now do they stick.
	for _, h := range []*metrics.HistogramVec{m.syncDuration, m.fullSyncDuration, m.partialSyncDuration, m.networkProgramming} {
		h.WithLabelValues(ipFamily)
	}
	m.lastSync.WithLabelValues(ipFamily)
	m.syncFailures.WithLabelValues(ipFamily)
	m.cleanupFailures.WithLabelValues(ipFamily)
	return nil
}

// synced records a sync attempt that ended at end. As kube-proxy, failed
// syncs are timed too, and the timestamp tells the last successful one.
func (m *Metrics) synced(res *SyncResult, end time.Time, err error) {
	if m == nil {
		return
	}
	d := res.Duration.Seconds()
	m.syncDuration.WithLabelValues(ipFamily).Observe(d)
	if res.Full {
		m.fullSyncDuration.WithLabelValues(ipFamily).Observe(d)
	} else {
		m.partialSyncDuration.WithLabelValues(ipFamily).Observe(d)
	}
	if err != nil {
		m.syncFailures.WithLabelValues(ipFamily).Inc()
		return
	}
	m.lastSync.WithLabelValues(ipFamily).Set(float64(end.UnixNano()) / 1e9)
}

// cleanupFailed counts a failed deletion of stale chains.
func (m *Metrics) cleanupFailed() {
	if m == nil {
		return
	}
	m.cleanupFailures.WithLabelValues(ipFamily).Inc()
}

// programmed records, for each EndpointSlice change applied by a sync
// that ended at applied, the time from the change (its
// endpoints.kubernetes.io/last-change-trigger-time) to then. A trigger
// later than applied (clocks of control plane and node apart) is left
// out rather than counted as 0.
func (m *Metrics) programmed(applied time.Time, triggers []time.Time) {
	if m == nil {
		return
	}
	for _, t := range triggers {
		if d := applied.Sub(t); d >= 0 {
			m.networkProgramming.WithLabelValues(ipFamily).Observe(d.Seconds())
		}
	}
}
