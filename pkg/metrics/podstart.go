package metrics

import (
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// pullWindow spans a pod's image pulls: from the first pull started to
// the last one finished, as upstream's pod startup latency tracker.
type pullWindow struct {
	first, last time.Time
}

// PodWorkerDuration records one pass of a pod worker (operation: create,
// update, sync, kill or terminated, upstream's update types).
func (m *Metrics) PodWorkerDuration(operation string, d time.Duration) {
	m.kubelet.podWorkerDuration.WithLabelValues(operation).Observe(d.Seconds())
}

// ImagePullStarted notes that an image pull for the pod began.
func (m *Metrics) ImagePullStarted(pod types.UID) {
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	w := m.pulls[pod]
	if w.first.IsZero() {
		w.first = now
	}
	m.pulls[pod] = w
}

// ImagePullFinished records a successful pull of an image of sizeBytes
// (0 when unknown) that took d, waiting included.
func (m *Metrics) ImagePullFinished(pod types.UID, d time.Duration, sizeBytes uint64) {
	m.kubelet.imagePullDuration.WithLabelValues(imageSizeBucket(sizeBytes)).Observe(d.Seconds())
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	if w, ok := m.pulls[pod]; ok {
		w.last = now
		m.pulls[pod] = w
	}
}

// PodStarted records a pod whose containers all run for the first time,
// at running; firstSeen is when the agent first saw it. The SLI excludes
// the span of its image pulls and, like the total, counts from the pod's
// creation (static pods without one count from firstSeen).
func (m *Metrics) PodStarted(pod *v1.Pod, firstSeen, running time.Time) {
	m.kubelet.podStartDuration.Observe(running.Sub(firstSeen).Seconds())
	created := pod.CreationTimestamp.Time
	if created.IsZero() {
		created = firstSeen
	}
	m.mu.Lock()
	w := m.pulls[pod.UID]
	delete(m.pulls, pod.UID)
	m.mu.Unlock()
	var pulling time.Duration
	if !w.first.IsZero() && w.last.After(w.first) {
		pulling = w.last.Sub(w.first)
	}
	total := running.Sub(created)
	m.kubelet.podStartSLIDuration.WithLabelValues().Observe((total - pulling).Seconds())
	m.kubelet.podStartTotalDuration.WithLabelValues().Observe(total.Seconds())
}

// PodPreempted counts a pod stopped to admit a critical pod, by the first
// resource the critical pod lacked.
func (m *Metrics) PodPreempted(signal string) {
	m.kubelet.preemptions.WithLabelValues(signal).Inc()
}

// PodForgotten drops what is kept for a pod that left the node.
func (m *Metrics) PodForgotten(pod types.UID) {
	m.mu.Lock()
	delete(m.pulls, pod)
	m.mu.Unlock()
}

// imageSizeBuckets are upstream's image_size_in_bytes label values, by
// lower bound.
var imageSizeBuckets = []struct {
	above uint64
	label string
}{
	{100 << 30, "GT100GB"},
	{60 << 30, "60GB-100GB"},
	{40 << 30, "40GB-60GB"},
	{30 << 30, "30GB-40GB"},
	{20 << 30, "20GB-30GB"},
	{10 << 30, "10GB-20GB"},
	{5 << 30, "5GB-10GB"},
	{1 << 30, "1GB-5GB"},
	{500 << 20, "500MB-1GB"},
	{100 << 20, "100MB-500MB"},
	{10 << 20, "10MB-100MB"},
	{0, "0-10MB"},
}

// imageSizeBucket labels an image size; 0 (unknown) is "N/A" as upstream.
func imageSizeBucket(size uint64) string {
	if size == 0 {
		return "N/A"
	}
	for _, b := range imageSizeBuckets {
		if size > b.above {
			return b.label
		}
	}
	return ""
}

// ImageGarbageCollected counts one image removed by image garbage
// collection, reason "age" or "space" (kubelet_image_garbage_collected_total).
func (m *Metrics) ImageGarbageCollected(reason string) {
	m.kubelet.imageGarbageCollected.WithLabelValues(reason).Inc()
}

// CgroupManagerOperation observes one cgroup operation of the pod, QoS or
// node allocatable cgroups: create, update or destroy
// (kubelet_cgroup_manager_duration_seconds).
func (m *Metrics) CgroupManagerOperation(operation string, d time.Duration) {
	m.kubelet.cgroupManagerDuration.WithLabelValues(operation).Observe(d.Seconds())
}
