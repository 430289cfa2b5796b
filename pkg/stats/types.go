package stats

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The summary API (/stats/summary), in the JSON shape of the kubelet's
// k8s.io/kubelet/pkg/apis/stats/v1alpha1 (not a dependency of this
// module). Fields the agent does not fill (accelerators, user-defined
// metrics, PSI, persistent volumes' stats, process stats) are left out;
// clients ignore missing optional fields.

// Summary is a node's and its pods' resource usage.
type Summary struct {
	Node NodeStats  `json:"node"`
	Pods []PodStats `json:"pods"`
}

// NodeStats is the node's usage.
type NodeStats struct {
	NodeName  string        `json:"nodeName"`
	StartTime metav1.Time   `json:"startTime"`
	CPU       *CPUStats     `json:"cpu,omitempty"`
	Memory    *MemoryStats  `json:"memory,omitempty"`
	Network   *NetworkStats `json:"network,omitempty"`
	Fs        *FsStats      `json:"fs,omitempty"`
	Runtime   *RuntimeStats `json:"runtime,omitempty"`
	Rlimit    *RlimitStats  `json:"rlimit,omitempty"`
	Swap      *SwapStats    `json:"swap,omitempty"`
}

// RlimitStats are the node's process limits.
type RlimitStats struct {
	Time                  metav1.Time `json:"time"`
	MaxPID                *int64      `json:"maxpid,omitempty"`
	NumOfRunningProcesses *int64      `json:"curproc,omitempty"`
}

// RuntimeStats are the container runtime's filesystems.
type RuntimeStats struct {
	ImageFs     *FsStats `json:"imageFs,omitempty"`
	ContainerFs *FsStats `json:"containerFs,omitempty"`
}

// PodStats is one pod's usage.
type PodStats struct {
	PodRef     PodReference     `json:"podRef"`
	StartTime  metav1.Time      `json:"startTime"`
	Containers []ContainerStats `json:"containers"`
	CPU        *CPUStats        `json:"cpu,omitempty"`
	Memory     *MemoryStats     `json:"memory,omitempty"`
	Network    *NetworkStats    `json:"network,omitempty"`
	// VolumeStats are the pod's volumes with usage metrics (emptyDir,
	// configMap, secret, projected, downward API).
	VolumeStats []VolumeStats `json:"volume,omitempty"`
	// EphemeralStorage is the pod's local ephemeral storage: writable
	// layers, logs, local ephemeral volumes, etc-hosts.
	EphemeralStorage *FsStats   `json:"ephemeral-storage,omitempty"`
	Swap             *SwapStats `json:"swap,omitempty"`
}

// VolumeStats is one volume's usage and its filesystem's size, under the
// volume's name in the pod spec.
type VolumeStats struct {
	FsStats
	Name string `json:"name,omitempty"`
}

// ContainerStats is one container's usage.
type ContainerStats struct {
	Name      string       `json:"name"`
	StartTime metav1.Time  `json:"startTime"`
	CPU       *CPUStats    `json:"cpu,omitempty"`
	Memory    *MemoryStats `json:"memory,omitempty"`
	Rootfs    *FsStats     `json:"rootfs,omitempty"`
	Logs      *FsStats     `json:"logs,omitempty"`
	Swap      *SwapStats   `json:"swap,omitempty"`
}

// PodReference names a pod.
type PodReference struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
	UID       string `json:"uid"`
}

// InterfaceStats are one network interface's counters.
type InterfaceStats struct {
	Name     string  `json:"name"`
	RxBytes  *uint64 `json:"rxBytes,omitempty"`
	RxErrors *uint64 `json:"rxErrors,omitempty"`
	TxBytes  *uint64 `json:"txBytes,omitempty"`
	TxErrors *uint64 `json:"txErrors,omitempty"`
}

// NetworkStats are the default interface's counters, inlined, and every
// interface's.
type NetworkStats struct {
	Time           metav1.Time `json:"time"`
	InterfaceStats `json:""`
	Interfaces     []InterfaceStats `json:"interfaces,omitempty"`
}

// CPUStats: cumulative core-nanoseconds and the current rate in
// nanocores.
type CPUStats struct {
	Time                 metav1.Time `json:"time"`
	UsageNanoCores       *uint64     `json:"usageNanoCores,omitempty"`
	UsageCoreNanoSeconds *uint64     `json:"usageCoreNanoSeconds,omitempty"`
}

// MemoryStats in bytes; the working set is what eviction and `kubectl
// top` use.
type MemoryStats struct {
	Time            metav1.Time `json:"time"`
	AvailableBytes  *uint64     `json:"availableBytes,omitempty"`
	UsageBytes      *uint64     `json:"usageBytes,omitempty"`
	WorkingSetBytes *uint64     `json:"workingSetBytes,omitempty"`
	RSSBytes        *uint64     `json:"rssBytes,omitempty"`
	PageFaults      *uint64     `json:"pageFaults,omitempty"`
	MajorPageFaults *uint64     `json:"majorPageFaults,omitempty"`
}

// SwapStats in bytes.
type SwapStats struct {
	Time               metav1.Time `json:"time"`
	SwapAvailableBytes *uint64     `json:"swapAvailableBytes,omitempty"`
	SwapUsageBytes     *uint64     `json:"swapUsageBytes,omitempty"`
}

// FsStats is a filesystem's (or a part of one's) size and use.
type FsStats struct {
	Time           metav1.Time `json:"time"`
	AvailableBytes *uint64     `json:"availableBytes,omitempty"`
	CapacityBytes  *uint64     `json:"capacityBytes,omitempty"`
	UsedBytes      *uint64     `json:"usedBytes,omitempty"`
	InodesFree     *uint64     `json:"inodesFree,omitempty"`
	Inodes         *uint64     `json:"inodes,omitempty"`
	InodesUsed     *uint64     `json:"inodesUsed,omitempty"`
}
