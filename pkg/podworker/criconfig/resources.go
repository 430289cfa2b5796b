package criconfig

import (
	v1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"
	criv1 "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodeagent/nodeagent/pkg/podcgroup"
	"github.com/nodeagent/nodeagent/pkg/podutil"
)

// ContainerResources is what a resized container's cgroup gets through
// UpdateContainerResources: the same as at its creation.
func ContainerResources(pod *v1.Pod, c *v1.Container, node Node) *criv1.LinuxContainerResources {
	return containerResources(pod, c, node.Allocatable.Memory().Value())
}

func containerResources(pod *v1.Pod, c *v1.Container, memCapacity int64) *criv1.LinuxContainerResources {
	r := &criv1.LinuxContainerResources{
		CpuShares:   int64(podcgroup.MilliCPUToShares(c.Resources.Requests.Cpu().MilliValue())),
		OomScoreAdj: oomScoreAdj(pod, c, memCapacity),
	}
	if lim, ok := c.Resources.Limits[v1.ResourceCPU]; ok {
		r.CpuPeriod = podcgroup.QuotaPeriod
		r.CpuQuota = podcgroup.MilliCPUToQuota(lim.MilliValue(), podcgroup.QuotaPeriod)
	}
	if lim, ok := c.Resources.Limits[v1.ResourceMemory]; ok {
		r.MemoryLimitInBytes = lim.Value()
	}
	return r
}

// oomScoreAdj follows the kubelet's QoS policy (GetContainerOOMScoreAdjust):
// node-critical pods (system-node-critical and critical) and guaranteed
// ones are protected, best-effort ones go first, burstable ones in between
// by the share of node memory they request. The runtime clamps the value
// when the host refuses negative ones (restrict_oom_score_adj).
func oomScoreAdj(pod *v1.Pod, c *v1.Container, memCapacity int64) int64 {
	const guaranteed, bestEffort = -997, 1000
	if podutil.IsNodeCritical(pod) {
		return guaranteed
	}
	switch QOSClass(pod) {
	case v1.PodQOSGuaranteed:
		return guaranteed
	case v1.PodQOSBestEffort:
		return bestEffort
	}
	if memCapacity <= 0 {
		return bestEffort - 1
	}
	// A pod-level memory request beyond the containers' is shared out
	// equally among them (KEP-2837).
	var extra int64
	if resourcehelper.IsPodLevelRequestsSet(pod) {
		extra = unallocatedMemoryPerContainer(pod)
	}
	adj := 1000 - (1000*(c.Resources.Requests.Memory().Value()+extra))/memCapacity
	// A sidecar goes no later than the app container requesting least.
	if podutil.IsSidecarNamed(pod, c.Name) && len(pod.Spec.Containers) > 0 {
		adj = min(adj, 1000-(1000*(minAppMemoryRequest(pod)+extra))/memCapacity)
	}
	// Stay above any guaranteed pod and below best-effort ones.
	return min(max(adj, 1000+guaranteed), bestEffort-1)
}

// unallocatedMemoryPerContainer is the kubelet's
// remainingPodMemReqPerContainer: the pod-level memory request less the
// containers' aggregate, divided among all containers.
func unallocatedMemoryPerContainer(pod *v1.Pod) int64 {
	podReq := pod.Spec.Resources.Requests.Memory().Value()
	if podReq == 0 {
		return 0
	}
	containers := resourcehelper.AggregateContainerRequests(pod, resourcehelper.PodResourcesOptions{})
	return (podReq - containers.Memory().Value()) / int64(len(pod.Spec.Containers)+len(pod.Spec.InitContainers))
}

func minAppMemoryRequest(pod *v1.Pod) int64 {
	least := pod.Spec.Containers[0].Resources.Requests.Memory().Value()
	for _, c := range pod.Spec.Containers[1:] {
		least = min(least, c.Resources.Requests.Memory().Value())
	}
	return least
}

// QOSClass is the class the kubelet acts on: the API's status.qosClass,
// computed as the API computes it when the pod has none (static pods).
func QOSClass(pod *v1.Pod) v1.PodQOSClass { return podutil.QOSClass(pod) }
