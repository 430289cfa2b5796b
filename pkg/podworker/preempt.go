package podworker

import (
	"context"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// minKillWait is killPodNow's least wait for a pod to be stopped; it
// waits one and a half grace periods when that is longer.
const minKillWait = 10 * time.Second

// killWait is how long killPodNow waits for the pod: upstream counts the
// grace period of the spec (0 without one), not the agent's minimum.
func killWait(pod *v1.Pod) time.Duration {
	var g int64
	if pod.Spec.TerminationGracePeriodSeconds != nil {
		g = *pod.Spec.TerminationGracePeriodSeconds
	}
	return max(time.Duration(g+g/2)*time.Second, minKillWait)
}

// preemptLocked stops the plan's victims before the critical pod is
// admitted, one at a time, as the kubelet's evictPodsToFreeRequests does
// through killPodNow: a warning event, then the victim is failed
// (Preempting, with the DisruptionTarget condition) and its containers
// stopped, and the wait ends once nothing of it runs. A victim not
// stopped in time is logged and the pod admitted all the same, as
// upstream; its worker goes on stopping it. The manager's lock is
// released while waiting: the victims' workers may need it.
func (m *Manager) preemptLocked(ctx context.Context, pod *v1.Pod, plan preemptionPlan) {
	m.log.Info("preempting pods to admit a critical pod", "pod", pod.Namespace+"/"+pod.Name, "podUID", pod.UID,
		"victims", len(plan.Victims), "signal", plan.Signal)
	for _, v := range plan.Victims {
		w := m.workers[v.UID]
		if w == nil {
			continue
		}
		m.events.Eventf(v, v1.EventTypeWarning, reasonPreempting, "%s", msgPreempted)
		stopped := w.preempt()
		m.mu.Unlock()
		err := waitStopped(ctx, stopped, killWait(v))
		m.mu.Lock()
		log := m.log.With("pod", v.Namespace+"/"+v.Name, "podUID", v.UID, "requestingPod", pod.Namespace+"/"+pod.Name)
		if err != nil {
			if err == errKillTimeout {
				m.events.Eventf(v, v1.EventTypeWarning, reasonExceededGracePeriod, "%s", msgExceededGracePeriod)
			}
			log.Error("failed to evict pod", "err", err)
			continue
		}
		m.cfg.Metrics.PodPreempted(string(plan.Signal))
		log.Info("pod evicted successfully")
	}
}

// waitStopped waits for a worker's stopped channel, at most d.
func waitStopped(ctx context.Context, stopped <-chan struct{}, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-stopped:
		return nil
	case <-t.C:
		return errKillTimeout
	case <-ctx.Done():
		return ctx.Err()
	}
}

// preempt fails the pod for good, as killPodNow's status function does
// (phase Failed, reason Preempting, and the DisruptionTarget condition),
// interrupting a sync in progress; the next sync stops its containers
// within their grace period. The returned channel is closed once nothing
// of the pod runs. A pod already failed keeps its first reason.
func (w *worker) preempt() <-chan struct{} {
	w.d.probes.StopLivenessAndStartup(w.uid) // a container being stopped is not killed again
	w.mu.Lock()
	if w.failReason == "" {
		w.failReason, w.failMessage = reasonPreempting, msgPreempted
		w.failCondition = &v1.PodCondition{
			Type: v1.DisruptionTarget, Status: v1.ConditionTrue,
			Reason: v1.PodReasonTerminationByKubelet, Message: msgPreemptedCondition,
			LastTransitionTime: metav1.NewTime(w.d.now()), ObservedGeneration: w.pod.Generation,
		}
	}
	w.noteWorkLocked(opKill)
	if w.cancelSync != nil {
		w.cancelSync()
	}
	w.mu.Unlock()
	w.wake()
	return w.stopped
}

// markStopped records that nothing of the pod runs any more after it was
// stopped for good, which preemption waits for.
func (w *worker) markStopped() {
	w.mu.Lock()
	defer w.mu.Unlock()
	select {
	case <-w.stopped:
	default:
		close(w.stopped)
	}
}
