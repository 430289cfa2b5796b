package podworker

import (
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"
)

// The kubelet's active deadline handler's reason and message.
const (
	reasonDeadlineExceeded  = "DeadlineExceeded"
	messageDeadlineExceeded = "Pod was active on the node longer than the specified deadline"
)

// untilDeadline is the time left before the pod's activeDeadlineSeconds,
// counted from when the agent started it; ok is false without a deadline.
func untilDeadline(pod *v1.Pod, start, now time.Time) (left time.Duration, ok bool) {
	if pod.Spec.ActiveDeadlineSeconds == nil || start.IsZero() {
		return 0, false
	}
	return start.Add(time.Duration(*pod.Spec.ActiveDeadlineSeconds) * time.Second).Sub(now), true
}

// checkDeadline fails a pod past its active deadline, once: the pod is
// then stopped and reported Failed with reason DeadlineExceeded.
func (w *worker) checkDeadline(pod *v1.Pod) bool {
	w.mu.Lock()
	left, ok := untilDeadline(pod, w.startTime, w.d.now())
	already := w.failReason != ""
	if ok && left <= 0 && !already {
		w.failReason, w.failMessage = reasonDeadlineExceeded, messageDeadlineExceeded
	}
	failed := w.failReason != ""
	w.mu.Unlock()
	if failed && !already {
		w.log.Info("pod exceeded its active deadline", "activeDeadlineSeconds", *pod.Spec.ActiveDeadlineSeconds)
		w.d.events.Eventf(pod, v1.EventTypeNormal, reasonDeadlineExceeded, "%s", messageDeadlineExceeded)
	}
	return failed
}

// applyFailureLocked makes the generated status Failed with the recorded
// reason, and the recorded condition replacing any of its type.
func (w *worker) applyFailureLocked(s *v1.PodStatus) {
	if w.failReason == "" {
		return
	}
	s.Phase, s.Reason, s.Message = v1.PodFailed, w.failReason, w.failMessage
	for i := range s.Conditions {
		if t := s.Conditions[i].Type; (t == v1.PodReady || t == v1.ContainersReady) && s.Conditions[i].Status == v1.ConditionTrue {
			s.Conditions[i].Status, s.Conditions[i].Reason = v1.ConditionFalse, "PodFailed"
		}
	}
	if c := w.failCondition; c != nil {
		s.Conditions = slices.DeleteFunc(s.Conditions, func(o v1.PodCondition) bool { return o.Type == c.Type })
		s.Conditions = append(s.Conditions, *c)
	}
}
