package podcgroup

import (
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/nodeagent/nodeagent/pkg/podutil"
)

// QOSPeriod is how often the QoS cgroups are rewritten even when no pod
// came or went (the kubelet's periodicQOSCgroupUpdateInterval).
const QOSPeriod = time.Minute

// unboundedHugePages is the huge page limit of the QoS tiers: the
// kubelet's "effectively unbounded" 1<<62.
const unboundedHugePages = int64(1) << 62

// QOSCgroups are the QoS tiers under the kubepods cgroup (Guaranteed pods
// live in kubepods itself).
type QOSCgroups struct {
	Kubepods string
}

// Burstable and BestEffort are the tiers' cgroup names.
func (q QOSCgroups) Burstable() string  { return q.Kubepods + "/burstable" }
func (q QOSCgroups) BestEffort() string { return q.Kubepods + "/besteffort" }

// QOSPlan is what the QoS tiers are given.
type QOSPlan struct {
	Burstable, BestEffort ResourceConfig
}

// PlanQOS is the kubelet's QoS container manager update (UpdateCgroups):
// BestEffort always gets the minimum cpu shares, Burstable the shares of
// the summed cpu requests of the Burstable pods (the minimum with none),
// and both tiers leave every huge page size unbounded. Memory is left
// alone: the kubelet limits the tiers' memory only with the MemoryQoS
// (memory.min) or QOSReserved gates, both off by default and absent here.
func PlanQOS(pods []*v1.Pod, hugePageSizes []int64) QOSPlan {
	var milli int64
	for _, p := range pods {
		milli += burstableCPURequest(p)
	}
	return planQOS(milli, hugePageSizes)
}

// planQOS is PlanQOS from the Burstable pods' summed cpu requests.
func planQOS(milli int64, hugePageSizes []int64) QOSPlan {
	burstable, bestEffort := MilliCPUToShares(milli), uint64(MinShares)
	return QOSPlan{
		Burstable:  ResourceConfig{CPUShares: &burstable, HugePageLimit: unbounded(hugePageSizes)},
		BestEffort: ResourceConfig{CPUShares: &bestEffort, HugePageLimit: unbounded(hugePageSizes)},
	}
}

// burstableCPURequest is the pod's cpu request (upstream's PodRequests,
// as ForPod counts it) when the pod is Burstable, else 0.
func burstableCPURequest(pod *v1.Pod) int64 {
	if podutil.QOSClass(pod) != v1.PodQOSBurstable {
		return 0
	}
	reqs := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
	return reqs.Cpu().MilliValue()
}

func unbounded(sizes []int64) map[int64]int64 {
	out := map[int64]int64{}
	for _, s := range sizes {
		out[s] = unboundedHugePages
	}
	return out
}

// ApplyQOS writes the plan into the tiers, creating them when missing.
func (f FS) ApplyQOS(q QOSCgroups, plan QOSPlan) error {
	if err := f.Apply(q.Burstable(), plan.Burstable); err != nil {
		return fmt.Errorf("top level %s QOS cgroup: %w", v1.PodQOSBurstable, err)
	}
	if err := f.Apply(q.BestEffort(), plan.BestEffort); err != nil {
		return fmt.Errorf("top level %s QOS cgroup: %w", v1.PodQOSBestEffort, err)
	}
	return nil
}
