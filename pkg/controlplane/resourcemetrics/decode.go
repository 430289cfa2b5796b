package resourcemetrics

import (
	"fmt"
	"io"
	"math"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"k8s.io/apimachinery/pkg/types"
)

// The kubelet's resource metrics that metrics-server reads.
const (
	nodeCPU          = "node_cpu_usage_seconds_total"
	nodeMemory       = "node_memory_working_set_bytes"
	containerCPU     = "container_cpu_usage_seconds_total"
	containerMemory  = "container_memory_working_set_bytes"
	containerStarted = "container_start_time_seconds"
)

// sample is a Point being assembled, with what it has seen so far.
type sample struct {
	Point
	hasCPU, hasMemory bool
}

// containerKey names one container of one pod.
type containerKey struct {
	pod       types.NamespacedName
	container string
}

// Decode reads one node's /metrics/resource (Prometheus text format).
// Samples without a timestamp are stamped with scraped. Only complete
// points (CPU and memory both present) are kept, as metrics-server drops
// incomplete ones.
func Decode(r io.Reader, node string, scraped time.Time) (*Batch, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(r)
	if err != nil {
		return nil, fmt.Errorf("parse resource metrics of node %s: %w", node, err)
	}
	var nodePoint sample
	containers := map[containerKey]*sample{}
	for name, f := range families {
		for _, m := range f.GetMetric() {
			at := stamp(m, scraped)
			if name == nodeCPU || name == nodeMemory {
				nodePoint.add(name, value(m), at)
				continue
			}
			if k, ok := containerOf(m); ok && isContainerMetric(name) {
				if containers[k] == nil {
					containers[k] = &sample{}
				}
				containers[k].add(name, value(m), at)
			}
		}
	}
	return assemble(node, nodePoint, containers), nil
}

func isContainerMetric(name string) bool {
	return name == containerCPU || name == containerMemory || name == containerStarted
}

// add records one sample. CPU sets the point's timestamp (the node's
// and containers' timestamps are their CPU samples', as metrics-server's).
// Seconds become nanoseconds rounded, where metrics-server truncates:
// the kubelet prints whole nanoseconds, which truncation can lose one of.
func (s *sample) add(name string, v float64, at time.Time) {
	switch name {
	case nodeCPU, containerCPU:
		s.CPU, s.Timestamp, s.hasCPU = uint64(math.Round(v*1e9)), at, true
	case nodeMemory, containerMemory:
		s.Memory, s.hasMemory = uint64(v), true
		if s.Timestamp.IsZero() {
			s.Timestamp = at
		}
	case containerStarted:
		s.StartTime = time.Unix(0, int64(math.Round(v*1e9)))
	}
}

func (s *sample) complete() bool { return s.hasCPU && s.hasMemory && !s.Timestamp.IsZero() }

func assemble(node string, n sample, containers map[containerKey]*sample) *Batch {
	b := newBatch()
	if n.complete() {
		b.Nodes[node] = n.Point
	}
	for k, c := range containers {
		if !c.complete() {
			continue
		}
		pod, ok := b.Pods[k.pod]
		if !ok {
			pod = PodPoint{Containers: map[string]Point{}}
			b.Pods[k.pod] = pod
		}
		pod.Containers[k.container] = c.Point
	}
	return b
}

// stamp is the sample's timestamp (milliseconds), or scraped without one.
func stamp(m *dto.Metric, scraped time.Time) time.Time {
	if m.TimestampMs == nil {
		return scraped
	}
	return time.UnixMilli(m.GetTimestampMs())
}

func value(m *dto.Metric) float64 {
	switch {
	case m.Counter != nil:
		return m.GetCounter().GetValue()
	case m.Gauge != nil:
		return m.GetGauge().GetValue()
	}
	return m.GetUntyped().GetValue()
}

// containerOf reads the container, pod and namespace labels.
func containerOf(m *dto.Metric) (containerKey, bool) {
	var k containerKey
	for _, lp := range m.GetLabel() {
		switch lp.GetName() {
		case "container":
			k.container = lp.GetValue()
		case "pod":
			k.pod.Name = lp.GetValue()
		case "namespace":
			k.pod.Namespace = lp.GetValue()
		}
	}
	return k, k.container != "" && k.pod.Name != "" && k.pod.Namespace != ""
}
