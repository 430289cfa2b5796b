package probe

import (
	"time"

	v1 "k8s.io/api/core/v1"
)

// Observer receives each probe run for the prober metrics (pkg/metrics).
type Observer interface {
	// ProbeRun reports one probe that gave a result; probeType is the
	// Kind, result upstream's label value (successful, failed, unknown).
	ProbeRun(probeType, result string, pod *v1.Pod, container string, d time.Duration)
	// ProbeWorkerDone reports that a container's probe no longer runs.
	ProbeWorkerDone(probeType string, pod *v1.Pod, container string)
}

type noMetrics struct{}

func (noMetrics) ProbeRun(string, string, *v1.Pod, string, time.Duration) {}
func (noMetrics) ProbeWorkerDone(string, *v1.Pod, string)                 {}

// resultLabel is upstream's result label for a probe result.
func resultLabel(r Result) string {
	switch r {
	case Success:
		return "successful"
	case Failure:
		return "failed"
	}
	return "unknown"
}
