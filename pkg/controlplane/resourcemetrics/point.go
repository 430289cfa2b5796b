package resourcemetrics

import (
	"sort"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// Point is one sample of a node or container.
type Point struct {
	// StartTime is the container's start (zero when unknown, and for
	// nodes); a later one means the container restarted.
	StartTime time.Time
	// Timestamp is when the kubelet measured the sample.
	Timestamp time.Time
	// CPU is the cumulative CPU time used, in nanoseconds.
	CPU uint64
	// Memory is the working set in bytes.
	Memory uint64
}

// PodPoint is one sample of a pod's containers, by name.
type PodPoint struct {
	Containers map[string]Point
}

// Batch is one scrape of one or more nodes.
type Batch struct {
	Nodes map[string]Point
	Pods  map[types.NamespacedName]PodPoint
}

func newBatch() *Batch {
	return &Batch{Nodes: map[string]Point{}, Pods: map[types.NamespacedName]PodPoint{}}
}

// merge adds b's points to a; a pod already in a keeps a's.
func (a *Batch) merge(b *Batch) {
	for name, p := range b.Nodes {
		a.Nodes[name] = p
	}
	for ref, p := range b.Pods {
		if _, dup := a.Pods[ref]; !dup {
			a.Pods[ref] = p
		}
	}
}

// sortedNames are the containers' names in order, so that answers are
// stable (metrics-server's follow map order).
func sortedNames(m map[string]Point) []string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
