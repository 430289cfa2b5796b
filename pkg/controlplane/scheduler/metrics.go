package scheduler

import (
	"time"

	"k8s.io/component-base/metrics"
)

// Results of a scheduling attempt, as upstream labels them: unschedulable
// means no node fits, error an internal or API problem.
const (
	resultScheduled     = "scheduled"
	resultUnschedulable = "unschedulable"
	resultError         = "error"
)

// Instruments are kube-scheduler's attempt metrics (pkg/scheduler/
// metrics), under its names, labels, buckets and help texts.
type Instruments struct {
	attempts *metrics.CounterVec
	duration *metrics.HistogramVec
}

// NewInstruments makes the metrics, registered with r unless r is nil.
func NewInstruments(r metrics.KubeRegistry) *Instruments {
	m := newInstruments()
	if r != nil {
		r.MustRegister(m.attempts, m.duration)
	}
	return m
}

func newInstruments() *Instruments {
	return &Instruments{
		attempts: metrics.NewCounterVec(&metrics.CounterOpts{
			Subsystem:      "scheduler",
			Name:           "schedule_attempts_total",
			Help:           "Number of attempts to schedule pods, by the result. 'unschedulable' means a pod could not be scheduled, while 'error' means an internal scheduler problem.",
			StabilityLevel: metrics.STABLE,
		}, []string{"result", "profile"}),
		duration: metrics.NewHistogramVec(&metrics.HistogramOpts{
			Subsystem:      "scheduler",
			Name:           "scheduling_attempt_duration_seconds",
			Help:           "Scheduling attempt latency in seconds (scheduling algorithm + binding)",
			Buckets:        metrics.ExponentialBuckets(0.001, 2, 15),
			StabilityLevel: metrics.STABLE,
		}, []string{"result", "profile"}),
	}
}

// attempt records one attempt's result and its duration since start (the
// beginning of its scheduling cycle; a scheduled pod's attempt ends when
// its binding does).
func (s *Scheduler) attempt(result string, start time.Time) {
	profile := s.cfg.SchedulerName // upstream's profile name is the scheduler name
	s.metrics.attempts.WithLabelValues(result, profile).Inc()
	s.metrics.duration.WithLabelValues(result, profile).Observe(time.Since(start).Seconds())
}
