package eviction

import v1 "k8s.io/api/core/v1"

// Signal is an eviction signal, named as in the kubelet's configuration.
type Signal string

// The signals the kubelet knows (pkg/kubelet/eviction/api/types.go).
const (
	SignalMemoryAvailable            Signal = "memory.available"
	SignalNodeFsAvailable            Signal = "nodefs.available"
	SignalNodeFsInodesFree           Signal = "nodefs.inodesFree"
	SignalImageFsAvailable           Signal = "imagefs.available"
	SignalImageFsInodesFree          Signal = "imagefs.inodesFree"
	SignalContainerFsAvailable       Signal = "containerfs.available"
	SignalContainerFsInodesFree      Signal = "containerfs.inodesFree"
	SignalAllocatableMemoryAvailable Signal = "allocatableMemory.available"
	SignalPIDAvailable               Signal = "pid.available"
)

// The kubelet_evictions eviction_signal label values of the local
// storage evictions; threshold evictions use their Signal.
const (
	SignalEphemeralContainerFsLimit = "ephemeralcontainerfs.limit"
	SignalEphemeralPodFsLimit       = "ephemeralpodfs.limit"
	SignalEmptyDirFsLimit           = "emptydirfs.limit"
)

// Metric names and their label, as the kubelet's (pkg/kubelet/metrics).
const (
	MetricEvictions     = "kubelet_evictions"
	MetricStatsAge      = "kubelet_eviction_stats_age_seconds"
	MetricLabelSignal   = "eviction_signal"
	resourceInodes      = v1.ResourceName("inodes")
	resourcePids        = v1.ResourceName("pids")
	immediateGraceSecs  = int64(1)
	reclaimEventReason  = "EvictionThresholdMet"
	reclaimEventMessage = "Attempting to reclaim %s"
)

// signalResource is the resource a signal measures. Only signals listed
// here are valid in the configuration: swap.available, which the kubelet
// declares, has no resource and is refused as the kubelet refuses it.
var signalResource = map[Signal]v1.ResourceName{
	SignalMemoryAvailable:            v1.ResourceMemory,
	SignalAllocatableMemoryAvailable: v1.ResourceMemory,
	SignalImageFsAvailable:           v1.ResourceEphemeralStorage,
	SignalImageFsInodesFree:          resourceInodes,
	SignalContainerFsAvailable:       v1.ResourceEphemeralStorage,
	SignalContainerFsInodesFree:      resourceInodes,
	SignalNodeFsAvailable:            v1.ResourceEphemeralStorage,
	SignalNodeFsInodesFree:           resourceInodes,
	SignalPIDAvailable:               resourcePids,
}

// signalCondition is the node condition a met threshold reports.
var signalCondition = map[Signal]v1.NodeConditionType{
	SignalMemoryAvailable:            v1.NodeMemoryPressure,
	SignalAllocatableMemoryAvailable: v1.NodeMemoryPressure,
	SignalImageFsAvailable:           v1.NodeDiskPressure,
	SignalContainerFsAvailable:       v1.NodeDiskPressure,
	SignalNodeFsAvailable:            v1.NodeDiskPressure,
	SignalImageFsInodesFree:          v1.NodeDiskPressure,
	SignalNodeFsInodesFree:           v1.NodeDiskPressure,
	SignalContainerFsInodesFree:      v1.NodeDiskPressure,
	SignalPIDAvailable:               v1.NodePIDPressure,
}

func validSignal(s Signal) bool {
	_, ok := signalResource[s]
	return ok
}

func isMemorySignal(s Signal) bool {
	return s == SignalMemoryAvailable || s == SignalAllocatableMemoryAvailable
}
