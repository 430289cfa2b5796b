package podworker

import (
	"context"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodeagent/nodeagent/pkg/eviction"
)

// Eviction is how the eviction manager stops one pod: the kubelet's
// evictPod (a Warning Evicted event with the annotations, then
// killPodNow with the grace period override and a status function).
type Eviction struct {
	Message     string
	Annotations map[string]string
	// Condition (DisruptionTarget) is added to the Failed status.
	Condition *v1.PodCondition
	// GracePeriodSeconds overrides the pod's; containers still get the
	// kubelet's minimum stop timeout (minGracePeriod).
	GracePeriodSeconds int64
}

// annotatedRecorder is client-go's AnnotatedEventf, which the API's
// recorder has and LogEvents has not.
type annotatedRecorder interface {
	AnnotatedEventf(object apiruntime.Object, annotations map[string]string, eventtype, reason, messageFmt string, args ...interface{})
}

// ActivePods are the pods the eviction manager ranks: the kubelet's
// GetActivePods, admitted pods neither finished nor being stopped.
func (m *Manager) ActivePods() []*v1.Pod {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []*v1.Pod
	for _, w := range m.workers {
		w.mu.Lock()
		active := !w.orphan && !w.terminal && w.state == Syncing && w.pod.DeletionTimestamp == nil && w.failReason == ""
		pod := w.pod
		w.mu.Unlock()
		if active {
			out = append(out, pod)
		}
	}
	return out
}

// Evict fails the pod (phase Failed, reason Evicted, the message and
// condition) and stops it with the override grace; the channel is closed
// once nothing of it runs and its volumes are torn down. False when the
// pod has no worker (gone meanwhile).
func (m *Manager) Evict(uid types.UID, e Eviction) (<-chan struct{}, bool) {
	m.mu.Lock()
	w := m.workers[uid]
	m.mu.Unlock()
	if w == nil {
		return nil, false
	}
	pod := w.Pod()
	if r, ok := m.events.(annotatedRecorder); ok {
		r.AnnotatedEventf(pod, e.Annotations, v1.EventTypeWarning, eviction.Reason, "%s", e.Message)
	} else {
		m.events.Eventf(pod, v1.EventTypeWarning, eviction.Reason, "%s", e.Message)
	}
	return w.evict(e), true
}

// evict is preempt with the eviction's reason, message, condition and
// grace; a pod already failed keeps its first reason.
func (w *worker) evict(e Eviction) <-chan struct{} {
	w.d.probes.StopLivenessAndStartup(w.uid)
	w.mu.Lock()
	if w.failReason == "" {
		w.failReason, w.failMessage = eviction.Reason, e.Message
		if c := e.Condition; c != nil {
			cond := *c
			cond.LastTransitionTime = metav1.NewTime(w.d.now())
			w.failCondition = &cond
		}
		g := e.GracePeriodSeconds
		w.graceOverride = &g
	}
	w.noteWorkLocked(opKill)
	if w.cancelSync != nil {
		w.cancelSync()
	}
	w.mu.Unlock()
	w.wake()
	return w.stopped
}

// Pod is the worker's latest spec.
func (w *worker) Pod() *v1.Pod {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.pod
}

// stopGrace is the stop timeout of a finished pod: an eviction's override
// (never below the kubelet's minimum, as its killContainer), else the
// pod's.
func (w *worker) stopGrace(pod *v1.Pod) int64 {
	w.mu.Lock()
	g := w.graceOverride
	w.mu.Unlock()
	if g == nil {
		return gracePeriod(pod)
	}
	return max(*g, minGracePeriod)
}

// releaseEvictedVolumes tears down an evicted pod's volumes once it is
// stopped, as the kubelet unmounts a terminated pod's volumes before the
// eviction manager counts it cleaned up: a memory-medium emptyDir frees
// its memory only then.
func (w *worker) releaseEvictedVolumes(pod *v1.Pod) {
	w.mu.Lock()
	evicted := w.graceOverride != nil
	w.mu.Unlock()
	if !evicted || w.d.volumes == nil {
		return
	}
	if err := w.d.volumes.TearDownPod(pod.UID); err != nil {
		w.log.Warn("tear down the evicted pod's volumes", "err", err)
	}
}

// admitUnderPressure is the kubelet's eviction admit handler, the first
// of its admit handlers.
func (m *Manager) admitUnderPressure(pod *v1.Pod) AdmitResult {
	if m.cfg.Pressure == nil {
		return AdmitResult{Admit: true}
	}
	a := eviction.Admit(m.cfg.Pressure(), pod)
	return AdmitResult{Admit: a.Admit, Reason: a.Reason, Message: a.Message}
}

// evictionWait bounds how long the eviction manager waits for an evicted
// pod's cleanup (the kubelet's podCleanupTimeout).
const evictionWait = 30 * time.Second

// WaitEvicted waits for an evicted pod to be stopped and cleaned up, at
// most the kubelet's 30 s; the error says it was not in time.
func WaitEvicted(ctx context.Context, stopped <-chan struct{}) error {
	return waitStopped(ctx, stopped, evictionWait)
}
