package eviction

import (
	"sort"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// cmpFunc orders two pods: negative when a goes before b (is evicted
// first).
type cmpFunc func(a, b *Pod) int

// rankFunc sorts pods in eviction order.
type rankFunc func(pods []*Pod)

func orderedBy(cmps ...cmpFunc) rankFunc {
	return func(pods []*Pod) {
		sort.SliceStable(pods, func(i, j int) bool {
			for _, c := range cmps {
				if r := c(pods[i], pods[j]); r != 0 {
					return r < 0
				}
			}
			return false
		})
	}
}

// cmpBool puts true before false.
func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return -1
	}
	return 1
}

// withStats: a pod without stats goes first, as the kubelet's comparisons.
func withStats(c cmpFunc) cmpFunc {
	return func(a, b *Pod) int {
		if a.Stats == nil || b.Stats == nil {
			return cmpBool(a.Stats == nil, b.Stats == nil)
		}
		return c(a, b)
	}
}

// byPriority: lower priority first.
func byPriority(a, b *Pod) int {
	switch {
	case a.Priority == b.Priority:
		return 0
	case a.Priority > b.Priority:
		return 1
	}
	return -1
}

func bytesQ(n *uint64) resource.Quantity {
	if n == nil {
		return resource.Quantity{Format: resource.BinarySI}
	}
	return *resource.NewQuantity(int64(*n), resource.BinarySI)
}

func memoryUsage(p *Pod) resource.Quantity { return bytesQ(p.Stats.MemoryWorkingSet) }

func exceedsMemoryRequests(a, b *Pod) int {
	ua, ub := memoryUsage(a), memoryUsage(b)
	return cmpBool(ua.Cmp(a.MemoryRequest) > 0, ub.Cmp(b.MemoryRequest) > 0)
}

// byMemoryAboveRequest: the larger consumer above its request first.
func byMemoryAboveRequest(a, b *Pod) int {
	ua, ub := memoryUsage(a), memoryUsage(b)
	ua.Sub(a.MemoryRequest)
	ub.Sub(b.MemoryRequest)
	return ub.Cmp(ua)
}

func byProcesses(a, b *Pod) int {
	pa, pb := int64(0), int64(0)
	if a.Stats.Processes != nil {
		pa = int64(*a.Stats.Processes)
	}
	if b.Stats.Processes != nil {
		pb = int64(*b.Stats.Processes)
	}
	switch {
	case pa == pb:
		return 0
	case pb > pa:
		return 1
	}
	return -1
}

// rankMemoryPressure: pods over their memory request, then by priority,
// then by usage above request.
var rankMemoryPressure = orderedBy(withStats(exceedsMemoryRequests), byPriority, withStats(byMemoryAboveRequest))

// rankPIDPressure: by priority, then by process count.
var rankPIDPressure = orderedBy(byPriority, withStats(byProcesses))

// fsStats is which parts of a pod's disk use a ranking counts.
type fsStats struct{ root, logs, localVolumes bool }

// diskUsage is the kubelet's podDiskUsage: the containers' writable
// layers and logs, the pod's local volumes, in bytes or inodes.
func diskUsage(p *Pod, what fsStats, r v1.ResourceName) resource.Quantity {
	format := resource.BinarySI
	if r == resourceInodes {
		format = resource.DecimalSI
	}
	total := resource.Quantity{Format: format}
	add := func(u *FsUsage) {
		if u == nil {
			return
		}
		n := u.UsedBytes
		if r == resourceInodes {
			n = u.InodesUsed
		}
		if n != nil {
			total.Add(*resource.NewQuantity(int64(*n), format))
		}
	}
	for _, c := range p.Stats.Containers {
		if what.root {
			add(c.Rootfs)
		}
		if what.logs {
			add(c.Logs)
		}
	}
	if what.localVolumes {
		for _, name := range p.LocalVolumes {
			for i := range p.Stats.Volumes {
				if p.Stats.Volumes[i].Name == name {
					add(&p.Stats.Volumes[i].FsUsage)
					break
				}
			}
		}
	}
	return total
}

func diskRequest(p *Pod, r v1.ResourceName) resource.Quantity {
	if r == v1.ResourceEphemeralStorage {
		return p.EphemeralStorageRequest
	}
	return resource.Quantity{}
}

// rankDiskPressure: pods over their request, priority, then usage above
// the ephemeral-storage request. The kubelet subtracts the
// ephemeral-storage request from inode counts too; so does this.
func rankDiskPressure(what fsStats, r v1.ResourceName) rankFunc {
	exceeds := func(a, b *Pod) int {
		ua, ub := diskUsage(a, what, r), diskUsage(b, what, r)
		ra, rb := diskRequest(a, r), diskRequest(b, r)
		return cmpBool(ua.Cmp(ra) > 0, ub.Cmp(rb) > 0)
	}
	above := func(a, b *Pod) int {
		ua, ub := diskUsage(a, what, r), diskUsage(b, what, r)
		ua.Sub(a.EphemeralStorageRequest)
		ub.Sub(b.EphemeralStorageRequest)
		return ub.Cmp(ua)
	}
	return orderedBy(withStats(exceeds), byPriority, withStats(above))
}

// rankFuncs is the kubelet's buildSignalToRankFunc for a disk layout.
func rankFuncs(d Disks) map[Signal]rankFunc {
	m := map[Signal]rankFunc{
		SignalMemoryAvailable:            rankMemoryPressure,
		SignalAllocatableMemoryAvailable: rankMemoryPressure,
		SignalPIDAvailable:               rankPIDPressure,
	}
	all := fsStats{root: true, logs: true, localVolumes: true}
	nodeFs, imageFs := all, all
	switch {
	case d.DedicatedImageFs && !d.SplitContainerImageFs:
		// The writable layers are on the image filesystem.
		nodeFs, imageFs = fsStats{logs: true, localVolumes: true}, fsStats{root: true}
	case d.DedicatedImageFs:
		// Only images on the image filesystem: no pod's usage there.
		imageFs = fsStats{}
	}
	m[SignalNodeFsAvailable] = rankDiskPressure(nodeFs, v1.ResourceEphemeralStorage)
	m[SignalNodeFsInodesFree] = rankDiskPressure(nodeFs, resourceInodes)
	m[SignalImageFsAvailable] = rankDiskPressure(imageFs, v1.ResourceEphemeralStorage)
	m[SignalImageFsInodesFree] = rankDiskPressure(imageFs, resourceInodes)
	m[SignalContainerFsAvailable], m[SignalContainerFsInodesFree] = m[SignalNodeFsAvailable], m[SignalNodeFsInodesFree]
	if d.DedicatedImageFs && !d.SplitContainerImageFs {
		m[SignalContainerFsAvailable], m[SignalContainerFsInodesFree] = m[SignalImageFsAvailable], m[SignalImageFsInodesFree]
	}
	return m
}
