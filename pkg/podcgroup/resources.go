package podcgroup

import (
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/nodeagent/nodeagent/pkg/podutil"
)

// ResourceConfig is what a pod cgroup is limited to; a nil field is left
// as the kernel (or an earlier write) has it, as in the kubelet's
// cm.ResourceConfig.
type ResourceConfig struct {
	CPUShares *uint64 // cgroup v1 cpu.shares; v2 cpu.weight is derived
	CPUQuota  *int64  // µs per period; -1 is unlimited
	CPUPeriod *uint64 // µs
	Memory    *int64  // bytes
	// HugePageLimit maps a page size in bytes to a limit in bytes; sizes
	// the pod does not request are limited to 0, as the kubelet does.
	HugePageLimit map[int64]int64
	PidsLimit     *int64
}

// Options are the node's settings ForPod combines with the pod.
type Options struct {
	// NoCPUQuota leaves the quota unlimited (the kubelet's
	// cpuCFSQuota=false).
	NoCPUQuota bool
	// CPUPeriod is the CFS period in µs; 0 is the kubelet's 100 ms.
	CPUPeriod uint64
	// PidsLimit is podPidsLimit; 0 or -1 leaves pids unlimited.
	PidsLimit int64

	// QOS, when set, makes the Manager keep the QoS tiers (cgroupsPerQOS);
	// HugePageSizes are the page sizes they leave unbounded.
	QOS           *QOSCgroups
	HugePageSizes []int64
	// QOSPeriod is how often the tiers are rewritten; 0: QOSPeriod.
	QOSPeriod time.Duration
	Now       func() time.Time // nil: time.Now
	Log       *slog.Logger     // nil: slog.Default()
	// Observe, when set, receives the duration of each cgroup write, by
	// the kubelet's cgroup manager operation (OpCreate, OpUpdate,
	// OpDestroy): kubelet_cgroup_manager_duration_seconds.
	Observe func(operation string, d time.Duration)
}

// The kubelet's cgroup manager operations, the operation_type label of
// kubelet_cgroup_manager_duration_seconds.
const (
	OpCreate  = "create"
	OpUpdate  = "update"
	OpDestroy = "destroy"
)

// ForPod is the kubelet's ResourceConfigForPod with the PodLevelResources
// gate on (beta, on by default since 1.34): the requests and limits of
// upstream's PodRequests/PodLimits (init containers and sidecars as the
// scheduler counts them, pod-level resources in place of the aggregate,
// overhead added), then the QoS class decides which of them the cgroup
// gets.
func ForPod(pod *v1.Pod, opts Options) ResourceConfig {
	reqs := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
	limits := resourcehelper.PodLimits(pod, resourcehelper.PodResourcesOptions{})
	cpuDeclared, memDeclared := limitsDeclared(pod)

	period := opts.CPUPeriod
	if period == 0 {
		period = QuotaPeriod
	}
	shares := MilliCPUToShares(reqs.Cpu().MilliValue())
	quota := MilliCPUToQuota(limits.Cpu().MilliValue(), int64(period))
	if opts.NoCPUQuota {
		quota = -1
	}
	memory := limits.Memory().Value()

	rc := ResourceConfig{HugePageLimit: HugePageLimits(reqs)}
	switch podutil.QOSClass(pod) {
	case v1.PodQOSGuaranteed:
		rc.CPUShares, rc.CPUQuota, rc.CPUPeriod, rc.Memory = &shares, &quota, &period, &memory
	case v1.PodQOSBurstable:
		rc.CPUShares = &shares
		if cpuDeclared {
			rc.CPUQuota, rc.CPUPeriod = &quota, &period
		}
		if memDeclared {
			rc.Memory = &memory
		}
	default:
		minimum := uint64(MinShares)
		rc.CPUShares = &minimum
	}
	if opts.PidsLimit > 0 {
		pids := opts.PidsLimit
		rc.PidsLimit = &pids
	}
	return rc
}

// limitsDeclared: whether the pod's cpu and memory are bounded, by every
// container (init containers included) limiting them, or by a pod-level
// limit.
func limitsDeclared(pod *v1.Pod) (cpu, memory bool) {
	cpu, memory = true, true
	for _, c := range podutil.AllContainers(pod) {
		if c.Resources.Limits.Cpu().IsZero() {
			cpu = false
		}
		if c.Resources.Limits.Memory().IsZero() {
			memory = false
		}
	}
	if resourcehelper.IsPodLevelResourcesSet(pod) {
		cpu = cpu || !pod.Spec.Resources.Limits.Cpu().IsZero()
		memory = memory || !pod.Spec.Resources.Limits.Memory().IsZero()
	}
	return cpu, memory
}

// HugePageLimits maps the huge page requests of list to page size → bytes.
func HugePageLimits(list v1.ResourceList) map[int64]int64 {
	out := map[int64]int64{}
	for name, q := range list {
		size, ok := hugePageSize(name)
		if !ok {
			continue
		}
		out[size] += q.Value()
	}
	return out
}

// hugePageSize is the page size in bytes of a hugepages-<size> resource.
func hugePageSize(name v1.ResourceName) (int64, bool) {
	s, ok := strings.CutPrefix(string(name), v1.ResourceHugePagesPrefix)
	if !ok {
		return 0, false
	}
	q, err := resource.ParseQuantity(s)
	if err != nil || q.Value() <= 0 {
		return 0, false
	}
	return q.Value(), true
}

// pageSizeName is a page size as the kernel names it in the hugetlb
// controller's files (2MB, 1GB), as the kubelet's
// HugePageUnitSizeFromByteSize does.
func pageSizeName(size int64) (string, error) {
	units := []string{"B", "KB", "MB", "GB", "TB", "PB"}
	i := 0
	for size >= 1024 && size%1024 == 0 && i < len(units)-1 {
		size /= 1024
		i++
	}
	if i == 0 {
		return "", fmt.Errorf("huge page size %d is not a multiple of 1KB", size)
	}
	return strconv.FormatInt(size, 10) + units[i], nil
}
