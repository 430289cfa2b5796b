package metrics

import (
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus/collectors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/component-base/metrics"

	"github.com/nodeagent/nodeagent/pkg/crash"
)

// Metrics owns the agent's registries and metrics; its methods are the
// hooks the runtime client, PLEG, pod workers and probers report through.
// Safe for concurrent use.
type Metrics struct {
	registry metrics.KubeRegistry // /metrics
	probes   metrics.KubeRegistry // /metrics/probes
	kubelet  *kubeletMetrics
	prober   *proberMetrics
	now      func() time.Time

	mu         sync.Mutex
	lastRelist time.Time // start of the last successful PLEG relist
	pulls      map[types.UID]pullWindow
}

// New builds the registries with every metric registered, and the node
// name gauge set.
func New(nodeName string) *Metrics {
	m := &Metrics{
		registry: metrics.NewKubeRegistry(),
		probes:   metrics.NewKubeRegistry(),
		kubelet:  newKubeletMetrics(),
		prober:   newProberMetrics(),
		now:      time.Now,
		pulls:    map[types.UID]pullWindow{},
	}
	m.kubelet.register(m.registry)
	_ = crash.Register(m.registry) // process-wide: the control plane may have it too
	// What legacyregistry adds to the kubelet's /metrics: the process and
	// Go runtime collectors, with all runtime/metrics.
	m.registry.RawMustRegister(
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		collectors.NewGoCollector(collectors.WithGoCollectorRuntimeMetrics(collectors.MetricsAll)))
	_ = metrics.RegisterProcessStartTime(m.probes.Register)
	m.probes.MustRegister(m.prober.results, m.prober.duration)
	m.kubelet.nodeName.WithLabelValues(nodeName).Set(1)
	return m
}

// Register adds a collector of another component (the service proxy's
// kubeproxy_* metrics) to the registry served on /metrics.
func (m *Metrics) Register(c metrics.Registerable) error {
	return m.registry.Register(c)
}

// Handler serves /metrics.
func (m *Metrics) Handler() http.Handler {
	return metrics.HandlerFor(m.registry, metrics.HandlerOpts{})
}

// ProbesHandler serves /metrics/probes; as upstream, a failing collector
// does not hide the others.
func (m *Metrics) ProbesHandler() http.Handler {
	return metrics.HandlerFor(m.probes, metrics.HandlerOpts{ErrorHandling: metrics.ContinueOnError})
}
