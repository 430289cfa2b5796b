package storage

import (
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/component-base/metrics"
)

// etcdLatencyBuckets are upstream's, kept equal to
// apiserver_request_duration_seconds' so that the two compare side by side.
var etcdLatencyBuckets = []float64{0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2, 3,
	4, 5, 6, 8, 10, 15, 20, 30, 45, 60}

// Metrics are the etcd request metrics of upstream's etcd3 storage
// (k8s.io/apiserver/pkg/storage/etcd3/metrics), under its names, labels
// (operation, group, resource) and buckets. One Metrics serves every Store
// of an API server; they record once registered (Register), and a nil
// *Metrics records nothing.
type Metrics struct {
	latency *metrics.HistogramVec
	total   *metrics.CounterVec
	errors  *metrics.CounterVec
}

// NewMetrics defines the metrics; nothing is recorded before Register.
func NewMetrics() *Metrics {
	labels := []string{"operation", "group", "resource"}
	return &Metrics{
		latency: metrics.NewHistogramVec(&metrics.HistogramOpts{
			Name:           "etcd_request_duration_seconds",
			Help:           "Etcd request latency in seconds for each operation and object type.",
			Buckets:        etcdLatencyBuckets,
			StabilityLevel: metrics.ALPHA,
		}, labels),
		total: metrics.NewCounterVec(&metrics.CounterOpts{
			Name:           "etcd_requests_total",
			Help:           "Etcd request counts for each operation and object type.",
			StabilityLevel: metrics.ALPHA,
		}, labels),
		errors: metrics.NewCounterVec(&metrics.CounterOpts{
			Name:           "etcd_request_errors_total",
			Help:           "Etcd failed request counts for each operation and object type.",
			StabilityLevel: metrics.ALPHA,
		}, labels),
	}
}

// Register adds the metrics to r.
func (m *Metrics) Register(r metrics.KubeRegistry) {
	r.MustRegister(m.latency, m.total, m.errors)
}

// Upstream's operation label values for the calls a Store makes.
const (
	opGet                       = "get"
	opCreate                    = "create"
	opUpdate                    = "update"
	opDelete                    = "delete"
	opList                      = "list"
	opGetCurrentResourceVersion = "getCurrentResourceVersion"
)

// etcdOp records the requests of one operation on one resource; nil
// records nothing.
type etcdOp struct {
	latency metrics.ObserverMetric
	total   metrics.CounterMetric
	errors  metrics.CounterMetric
}

// op materializes the label values once per Store, as upstream's
// RequestLatencyTracker does, so that recording takes no lookup.
func (m *Metrics) op(name string, gr schema.GroupResource) *etcdOp {
	if m == nil {
		return nil
	}
	return &etcdOp{
		latency: m.latency.WithLabelValues(name, gr.Group, gr.Resource),
		total:   m.total.WithLabelValues(name, gr.Group, gr.Resource),
		errors:  m.errors.WithLabelValues(name, gr.Group, gr.Resource),
	}
}

// record counts one request that began at start.
func (o *etcdOp) record(start time.Time, err error) {
	if o == nil {
		return
	}
	o.latency.Observe(time.Since(start).Seconds())
	o.total.Inc()
	if err != nil {
		o.errors.Inc()
	}
}

// etcdOps are a Store's operations, by upstream's names.
type etcdOps struct {
	get, create, update, delete, list, currentRV *etcdOp
}

func newEtcdOps(m *Metrics, gr schema.GroupResource) etcdOps {
	return etcdOps{
		get:       m.op(opGet, gr),
		create:    m.op(opCreate, gr),
		update:    m.op(opUpdate, gr),
		delete:    m.op(opDelete, gr),
		list:      m.op(opList, gr),
		currentRV: m.op(opGetCurrentResourceVersion, gr),
	}
}
