package metrics

import (
	"k8s.io/component-base/metrics"
)

// kubeletSubsystem prefixes the kubelet's own metrics.
const kubeletSubsystem = "kubelet"

// Upstream's bucket boundaries (pkg/kubelet/metrics).
var (
	podStartupDurationBuckets = []float64{0.5, 1, 2, 3, 4, 5, 6, 8, 10, 20, 30, 45, 60, 120, 180, 240, 300, 360, 480, 600, 900, 1200, 1800, 2700, 3600}
	imagePullDurationBuckets  = []float64{1, 5, 10, 20, 30, 60, 120, 180, 240, 300, 360, 480, 600, 900, 1200, 1800, 2700, 3600}
	runtimeOperationBuckets   = metrics.ExponentialBuckets(.005, 2.5, 14)
)

// kubeletMetrics are the kubelet_* metrics the agent reports.
type kubeletMetrics struct {
	nodeName              *metrics.GaugeVec
	podWorkerDuration     *metrics.HistogramVec
	podStartDuration      *metrics.Histogram
	podStartSLIDuration   *metrics.HistogramVec
	podStartTotalDuration *metrics.HistogramVec
	plegRelistDuration    *metrics.Histogram
	plegRelistInterval    *metrics.Histogram
	plegLastSeen          *metrics.Gauge
	runtimeOperations     *metrics.CounterVec
	runtimeDuration       *metrics.HistogramVec
	runtimeErrors         *metrics.CounterVec
	runningPods           *metrics.Gauge
	runningContainers     *metrics.GaugeVec
	imagePullDuration     *metrics.HistogramVec
	preemptions           *metrics.CounterVec
	imageGarbageCollected *metrics.CounterVec
	cgroupManagerDuration *metrics.HistogramVec
}

func histogram(name, help string, buckets []float64) *metrics.Histogram {
	return metrics.NewHistogram(&metrics.HistogramOpts{
		Subsystem: kubeletSubsystem, Name: name, Help: help, Buckets: buckets, StabilityLevel: metrics.ALPHA,
	})
}

func histogramVec(name, help string, buckets []float64, labels ...string) *metrics.HistogramVec {
	return metrics.NewHistogramVec(&metrics.HistogramOpts{
		Subsystem: kubeletSubsystem, Name: name, Help: help, Buckets: buckets, StabilityLevel: metrics.ALPHA,
	}, labels)
}

func counterVec(name, help string, labels ...string) *metrics.CounterVec {
	return metrics.NewCounterVec(&metrics.CounterOpts{
		Subsystem: kubeletSubsystem, Name: name, Help: help, StabilityLevel: metrics.ALPHA,
	}, labels)
}

func gauge(name, help string) *metrics.Gauge {
	return metrics.NewGauge(&metrics.GaugeOpts{
		Subsystem: kubeletSubsystem, Name: name, Help: help, StabilityLevel: metrics.ALPHA,
	})
}

func gaugeVec(name, help string, labels ...string) *metrics.GaugeVec {
	return metrics.NewGaugeVec(&metrics.GaugeOpts{
		Subsystem: kubeletSubsystem, Name: name, Help: help, StabilityLevel: metrics.ALPHA,
	}, labels)
}

// The help texts are upstream's word for word (typos included): scrapers
// and docs generators compare them.
func newKubeletMetrics() *kubeletMetrics {
	return &kubeletMetrics{
		nodeName: gaugeVec("node_name", "The node's name. The count is always 1.", "node"),
		podWorkerDuration: histogramVec("pod_worker_duration_seconds",
			"Duration in seconds to sync a single pod. Broken down by operation type: create, update, or sync",
			metrics.DefBuckets, "operation_type"),
		podStartDuration: histogram("pod_start_duration_seconds",
			"Duration in seconds from kubelet seeing a pod for the first time to the pod starting to run",
			podStartupDurationBuckets),
		podStartSLIDuration: histogramVec("pod_start_sli_duration_seconds",
			"Duration in seconds to start a pod, excluding time to pull images and run init containers, measured from pod creation timestamp to when all its containers are reported as started and observed via watch",
			podStartupDurationBuckets),
		podStartTotalDuration: histogramVec("pod_start_total_duration_seconds",
			"Duration in seconds to start a pod since creation, including time to pull images and run init containers, measured from pod creation timestamp to when all its containers are reported as started and observed via watch",
			podStartupDurationBuckets),
		plegRelistDuration: histogram("pleg_relist_duration_seconds", "Duration in seconds for relisting pods in PLEG.", metrics.DefBuckets),
		plegRelistInterval: histogram("pleg_relist_interval_seconds", "Interval in seconds between relisting in PLEG.", metrics.DefBuckets),
		plegLastSeen:       gauge("pleg_last_seen_seconds", "Timestamp in seconds when PLEG was last seen active."),
		runtimeOperations: counterVec("runtime_operations_total",
			"Cumulative number of runtime operations by operation type.", "operation_type"),
		runtimeDuration: histogramVec("runtime_operations_duration_seconds",
			"Duration in seconds of runtime operations. Broken down by operation type.", runtimeOperationBuckets, "operation_type"),
		runtimeErrors: counterVec("runtime_operations_errors_total",
			"Cumulative number of runtime operation errors by operation type.", "operation_type"),
		runningPods:       gauge("running_pods", "Number of pods that have a running pod sandbox"),
		runningContainers: gaugeVec("running_containers", "Number of containers currently running", "container_state"),
		imagePullDuration: histogramVec("image_pull_duration_seconds",
			"Duration in seconds to pull an image.", imagePullDurationBuckets, "image_size_in_bytes"),
		preemptions: counterVec("preemptions", "Cumulative number of pod preemptions by preemption resource", "preemption_signal"),
		imageGarbageCollected: counterVec("image_garbage_collected_total",
			"Total number of images garbage collected by the kubelet, whether through disk usage or image age.", "reason"),
		cgroupManagerDuration: histogramVec("cgroup_manager_duration_seconds",
			"Duration in seconds for cgroup manager operations. Broken down by method.", metrics.DefBuckets, "operation_type"),
	}
}

func (k *kubeletMetrics) register(r metrics.KubeRegistry) {
	r.MustRegister(k.nodeName, k.podWorkerDuration, k.podStartDuration, k.podStartSLIDuration,
		k.podStartTotalDuration, k.plegRelistDuration, k.plegRelistInterval, k.plegLastSeen,
		k.runtimeOperations, k.runtimeDuration, k.runtimeErrors, k.runningPods, k.runningContainers,
		k.imagePullDuration, k.preemptions, k.imageGarbageCollected, k.cgroupManagerDuration)
}
