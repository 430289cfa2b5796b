package resourcemetrics

import (
	"log/slog"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"
)

// freshContainerMinResolution is metrics-server's: a container younger
// than this gives too inaccurate a rate from its start time.
const freshContainerMinResolution = 10 * time.Second

// Storage keeps the last two points of every node and container (see the
// package documentation). Safe for concurrent use.
type Storage struct {
	resolution time.Duration
	log        *slog.Logger
	now        func() time.Time

	mu        sync.RWMutex
	lastNodes map[string]Point
	prevNodes map[string]Point
	lastPods  map[types.NamespacedName]PodPoint
	prevPods  map[types.NamespacedName]PodPoint
}

// NewStorage returns an empty Storage for scrapes every resolution.
func NewStorage(resolution time.Duration, log *slog.Logger) *Storage {
	if log == nil {
		log = slog.Default()
	}
	return &Storage{resolution: resolution, log: log, now: time.Now}
}

// Store replaces the last points with b's; each replaced point becomes the
// previous one when b's is newer. Nodes and pods missing from b are
// forgotten, as metrics-server forgets them.
func (s *Storage) Store(b *Batch) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lastNodes, s.prevNodes = storeNodes(b.Nodes, s.lastNodes, s.prevNodes)
	s.lastPods, s.prevPods = s.storePods(b.Pods)
}

// storeNodes is metrics-server's nodeStorage.Store.
func storeNodes(batch, last, prev map[string]Point) (map[string]Point, map[string]Point) {
	newLast := make(map[string]Point, len(batch))
	newPrev := make(map[string]Point, len(batch))
	for name, p := range batch {
		newLast[name] = p
		old, ok := last[name]
		if !ok {
			continue
		}
		if p.Timestamp.After(old.Timestamp) {
			newPrev[name] = old
		} else if before, ok := prev[name]; ok && before.Timestamp.Before(p.Timestamp) {
			newPrev[name] = before // the same sample again: keep the window
		}
	}
	return newLast, newPrev
}

// storePods is metrics-server's podStorage.Store.
func (s *Storage) storePods(batch map[types.NamespacedName]PodPoint) (map[types.NamespacedName]PodPoint, map[types.NamespacedName]PodPoint) {
	newLast := make(map[types.NamespacedName]PodPoint, len(batch))
	newPrev := make(map[types.NamespacedName]PodPoint, len(batch))
	for ref, pod := range batch {
		last := PodPoint{Containers: make(map[string]Point, len(pod.Containers))}
		prev := PodPoint{Containers: make(map[string]Point, len(pod.Containers))}
		for name, p := range pod.Containers {
			last.Containers[name] = p
			if before, ok := s.previousContainer(ref, name, p); ok {
				prev.Containers[name] = before
			}
		}
		newLast[ref] = last
		if len(prev.Containers) > 0 {
			newPrev[ref] = prev
		}
	}
	return newLast, newPrev
}

// previousContainer picks the point to compute p's rate from: a zero
// point at its start for a container started within the last resolution,
// else the stored point if the container has not restarted since.
func (s *Storage) previousContainer(ref types.NamespacedName, name string, p Point) (Point, bool) {
	if age := p.Timestamp.Sub(p.StartTime); p.StartTime.Before(p.Timestamp) && age < s.resolution && age >= freshContainerMinResolution {
		return Point{StartTime: p.StartTime, Timestamp: p.StartTime, Memory: p.Memory}, true
	}
	old, ok := s.lastPods[ref].Containers[name]
	if !ok || !p.StartTime.Before(old.Timestamp) {
		return Point{}, false
	}
	if p.Timestamp.After(old.Timestamp) {
		return old, true
	}
	prev, ok := s.prevPods[ref].Containers[name]
	return prev, ok && prev.Timestamp.Before(p.Timestamp)
}

// NodeMetrics returns the metrics of those nodes that have them, in the
// given order, labelled as the nodes.
func (s *Storage) NodeMetrics(nodes ...*v1.Node) []metricsv1beta1.NodeMetrics {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]metricsv1beta1.NodeMetrics, 0, len(nodes))
	for _, node := range nodes {
		last, ok1 := s.lastNodes[node.Name]
		prev, ok2 := s.prevNodes[node.Name]
		if !ok1 || !ok2 {
			continue
		}
		use, window, err := usage(last, prev)
		if err != nil {
			s.log.Warn("skipping node usage metric", "node", node.Name, "err", err)
			continue
		}
		out = append(out, metricsv1beta1.NodeMetrics{
			ObjectMeta: metav1.ObjectMeta{Name: node.Name, Labels: node.Labels, CreationTimestamp: metav1.NewTime(s.now())},
			Timestamp:  metav1.NewTime(last.Timestamp),
			Window:     metav1.Duration{Duration: window},
			Usage:      use,
		})
	}
	return out
}

// PodMetrics returns the metrics of those pods that have them for every
// container scraped, in the given order, labelled as the pods.
func (s *Storage) PodMetrics(pods ...*v1.Pod) []metricsv1beta1.PodMetrics {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]metricsv1beta1.PodMetrics, 0, len(pods))
	for _, pod := range pods {
		if pm, ok := s.podMetrics(pod); ok {
			out = append(out, pm)
		}
	}
	return out
}

func (s *Storage) podMetrics(pod *v1.Pod) (metricsv1beta1.PodMetrics, bool) {
	ref := types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}
	last, ok1 := s.lastPods[ref]
	prev, ok2 := s.prevPods[ref]
	if !ok1 || !ok2 {
		return metricsv1beta1.PodMetrics{}, false
	}
	containers := make([]metricsv1beta1.ContainerMetrics, 0, len(last.Containers))
	var earliest Point
	var window time.Duration
	for _, name := range sortedNames(last.Containers) {
		before, ok := prev.Containers[name]
		if !ok {
			return metricsv1beta1.PodMetrics{}, false // as metrics-server: all containers or none
		}
		use, w, err := usage(last.Containers[name], before)
		if err != nil {
			s.log.Warn("skipping container usage metric", "pod", ref.String(), "container", name, "err", err)
			continue
		}
		containers = append(containers, metricsv1beta1.ContainerMetrics{Name: name, Usage: use})
		if earliest.Timestamp.IsZero() || earliest.Timestamp.After(last.Containers[name].Timestamp) {
			earliest, window = last.Containers[name], w
		}
	}
	return metricsv1beta1.PodMetrics{
		ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace, Labels: pod.Labels, CreationTimestamp: metav1.NewTime(s.now())},
		Timestamp:  metav1.NewTime(earliest.Timestamp),
		Window:     metav1.Duration{Duration: window},
		Containers: containers,
	}, true
}
