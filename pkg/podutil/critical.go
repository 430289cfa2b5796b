package podutil

import v1 "k8s.io/api/core/v1"

// The system priority classes (upstream's pkg/apis/scheduling): values
// from SystemCriticalPriority up are reserved for the system.
const (
	SystemCriticalPriority int32 = 2_000_000_000
	SystemNodeCritical           = "system-node-critical"
)

// IsMirror reports whether the pod is a static pod's mirror in the API.
func IsMirror(pod *v1.Pod) bool {
	_, ok := pod.Annotations[ConfigMirrorAnnotation]
	return ok
}

// IsCritical is the kubelet's IsCriticalPod: static and mirror pods, and
// pods whose resolved priority is SystemCriticalPriority or more. A
// critical pod that does not fit makes room by preempting others, and is
// never preempted by a pod that is not.
func IsCritical(pod *v1.Pod) bool {
	return IsStatic(pod) || IsMirror(pod) || (pod.Spec.Priority != nil && *pod.Spec.Priority >= SystemCriticalPriority)
}

// IsNodeCritical is the kubelet's IsNodeCriticalPod: a critical pod of the
// system-node-critical class, which the OOM killer spares as long as a
// guaranteed one.
func IsNodeCritical(pod *v1.Pod) bool {
	return IsCritical(pod) && pod.Spec.PriorityClassName == SystemNodeCritical
}

// Preemptable is the kubelet's Preemptable: a critical preemptor may stop
// any pod that is not critical, and a pod may stop one of strictly lower
// priority when both have one.
func Preemptable(preemptor, preemptee *v1.Pod) bool {
	if IsCritical(preemptor) && !IsCritical(preemptee) {
		return true
	}
	if preemptor.Spec.Priority != nil && preemptee.Spec.Priority != nil {
		return *preemptor.Spec.Priority > *preemptee.Spec.Priority
	}
	return false
}
