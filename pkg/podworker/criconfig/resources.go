package criconfig

import (
	v1 "k8s.io/api/core/v1"
	criv1 "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodeagent/nodeagent/pkg/podutil"
)

// The kubelet's CPU conversion constants (cgroup v1 cpu.shares / cfs quota).
const (
	minShares    = 2
	maxShares    = 262144
	sharesPerCPU = 1024
	milliPerCPU  = 1000
	quotaPeriod  = 100000 // 100 ms in µs
	minQuota     = 1000
)

func milliCPUToShares(milli int64) int64 {
	if milli == 0 {
		return minShares
	}
	shares := milli * sharesPerCPU / milliPerCPU
	return min(max(shares, minShares), maxShares)
}

func milliCPUToQuota(milli int64) int64 {
	if milli == 0 {
		return 0
	}
	q := milli * quotaPeriod / milliPerCPU
	if q < minQuota {
		return minQuota
	}
	return q
}

func containerResources(pod *v1.Pod, c *v1.Container, memCapacity int64) *criv1.LinuxContainerResources {
	r := &criv1.LinuxContainerResources{
		CpuShares:   milliCPUToShares(c.Resources.Requests.Cpu().MilliValue()),
		OomScoreAdj: oomScoreAdj(pod, c, memCapacity),
	}
	if lim, ok := c.Resources.Limits[v1.ResourceCPU]; ok {
		r.CpuPeriod = quotaPeriod
		r.CpuQuota = milliCPUToQuota(lim.MilliValue())
	}
	if lim, ok := c.Resources.Limits[v1.ResourceMemory]; ok {
		r.MemoryLimitInBytes = lim.Value()
	}
	return r
}

// oomScoreAdj follows the kubelet's QoS policy: guaranteed pods are
// protected, best-effort ones go first, burstable ones in between by the
// share of node memory they request. The runtime clamps the value when the
// host refuses negative ones (restrict_oom_score_adj).
func oomScoreAdj(pod *v1.Pod, c *v1.Container, memCapacity int64) int64 {
	const guaranteed, bestEffort = -997, 1000
	switch QOSClass(pod) {
	case v1.PodQOSGuaranteed:
		return guaranteed
	case v1.PodQOSBestEffort:
		return bestEffort
	}
	if memCapacity <= 0 {
		return bestEffort - 1
	}
	adj := 1000 - (1000*c.Resources.Requests.Memory().Value())/memCapacity
	// Stay above any guaranteed pod and below best-effort ones.
	return min(max(adj, 1000+guaranteed), bestEffort-1)
}

// QOSClass classifies a pod as the API does.
func QOSClass(pod *v1.Pod) v1.PodQOSClass {
	requests, limits := v1.ResourceList{}, v1.ResourceList{}
	guaranteed := true
	all := podutil.AllContainers(pod)
	for _, c := range all {
		for name, q := range c.Resources.Requests {
			if name != v1.ResourceCPU && name != v1.ResourceMemory || q.IsZero() {
				continue
			}
			requests[name] = q
		}
		seen := 0
		for name, q := range c.Resources.Limits {
			if name != v1.ResourceCPU && name != v1.ResourceMemory || q.IsZero() {
				continue
			}
			seen++
			limits[name] = q
		}
		if seen < 2 {
			guaranteed = false
		}
	}
	if len(requests) == 0 && len(limits) == 0 {
		return v1.PodQOSBestEffort
	}
	if guaranteed {
		for _, c := range all {
			for _, name := range []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory} {
				req, hasReq := c.Resources.Requests[name]
				if hasReq && req.Cmp(c.Resources.Limits[name]) != 0 {
					return v1.PodQOSBurstable
				}
			}
		}
		return v1.PodQOSGuaranteed
	}
	return v1.PodQOSBurstable
}
