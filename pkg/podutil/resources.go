package podutil

import (
	v1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"
)

// LimitDefaults is what a container's unset limit reads as through the
// downward API (the kubelet's defaultPodLimitsForDownwardAPI): the
// pod-level limit of a resource pod-level resources support (cpu,
// memory), else the node's allocatable.
func LimitDefaults(pod *v1.Pod, allocatable v1.ResourceList) v1.ResourceList {
	if !resourcehelper.IsPodLevelLimitsSet(pod) {
		return allocatable
	}
	out := allocatable.DeepCopy()
	for _, name := range []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory, v1.ResourceEphemeralStorage} {
		if !resourcehelper.IsSupportedPodLevelResource(name) {
			continue
		}
		if q, ok := pod.Spec.Resources.Limits[name]; ok && !q.IsZero() {
			if _, ok := out[name]; ok {
				out[name] = q.DeepCopy()
			}
		}
	}
	return out
}
