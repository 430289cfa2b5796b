package volume

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"
)

// memoryVolumeSize is the size of a memory-backed volume's tmpfs, as the
// kubelet computes it: at most the node's allocatable memory (pods cannot
// use more), the pod's memory limit, and the volume's sizeLimit. Unknown
// bounds are skipped; 0 means none is known and the kernel's default
// (half the RAM) applies.
func memoryVolumeSize(pod *v1.Pod, sizeLimit *resource.Quantity, allocatable v1.ResourceList) int64 {
	var size int64
	lower := func(q int64) {
		if q > 0 && (size == 0 || q < size) {
			size = q
		}
	}
	lower(allocatable.Memory().Value())
	lower(podMemoryLimit(pod))
	if sizeLimit != nil {
		lower(sizeLimit.Value())
	}
	return size
}

// podMemoryLimit is the pod's memory limit as its cgroup gets it: the
// aggregated limits, but only when every container declares one (or the
// pod declares a pod-level limit); 0 otherwise.
func podMemoryLimit(pod *v1.Pod) int64 {
	declared := len(pod.Spec.Containers) > 0
	for _, list := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
			if list[i].Resources.Limits.Memory().IsZero() {
				declared = false
			}
		}
	}
	if pod.Spec.Resources != nil && !pod.Spec.Resources.Limits.Memory().IsZero() {
		declared = true
	}
	if !declared {
		return 0
	}
	limits := resourcehelper.PodLimits(pod, resourcehelper.PodResourcesOptions{})
	return limits.Memory().Value()
}
