package eviction

import (
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
)

// Figures are the summary API's numbers the kubelet's makeSignalObservations
// reads, in bytes, inodes and processes. Nil parts were not measured: their
// signals have no observation and their thresholds are not evaluated.
type Figures struct {
	// Memory is the node's (the root cgroup's, as cAdvisor's).
	Memory *MemoryFigures
	// Pods is the kubepods cgroup's memory, Available being node
	// allocatable minus its working set.
	Pods *MemoryFigures
	// Swap the pods may use and use (LimitedSwap); zero without swap.
	AccessibleSwap, SwapUsage    uint64
	NodeFs, ImageFs, ContainerFs *FsFigures
	Rlimit                       *RlimitFigures
}

// MemoryFigures: Available is what the summary reports (capacity minus
// working set, floored at zero).
type MemoryFigures struct {
	Time       time.Time
	Available  uint64
	WorkingSet uint64
}

// NodeMemory computes the node's figures as the summary provider does.
func NodeMemory(at time.Time, capacity, workingSet uint64) *MemoryFigures {
	avail := uint64(0)
	if capacity > workingSet {
		avail = capacity - workingSet
	}
	return &MemoryFigures{Time: at, Available: avail, WorkingSet: workingSet}
}

// FsFigures is a filesystem's space and inodes; Inodes nil when unknown.
type FsFigures struct {
	Time                time.Time
	Available, Capacity uint64
	InodesFree, Inodes  *uint64
}

// RlimitFigures: the node's pid limit and its running processes.
type RlimitFigures struct {
	Time            time.Time
	MaxPID, Running int64
}

// Observation is one signal's available and capacity at a time.
type Observation struct {
	Available, Capacity int64
	Time                time.Time
}

// Observations by signal.
type Observations map[Signal]Observation

// MakeObservations is the kubelet's makeSignalObservations.
// memory.available counts the swap the pods may still use, as the kubelet's
// does on Linux.
func MakeObservations(f Figures) Observations {
	obs := Observations{}
	if m := f.Memory; m != nil {
		obs[SignalMemoryAvailable] = Observation{
			Available: int64(m.Available) + int64(f.AccessibleSwap) - int64(f.SwapUsage),
			Capacity:  int64(m.Available+m.WorkingSet) + int64(f.AccessibleSwap),
			Time:      m.Time,
		}
	}
	if m := f.Pods; m != nil {
		obs[SignalAllocatableMemoryAvailable] = Observation{Available: int64(m.Available), Capacity: int64(m.Available + m.WorkingSet), Time: m.Time}
	}
	addFs(obs, f.NodeFs, SignalNodeFsAvailable, SignalNodeFsInodesFree)
	addFs(obs, f.ImageFs, SignalImageFsAvailable, SignalImageFsInodesFree)
	addFs(obs, f.ContainerFs, SignalContainerFsAvailable, SignalContainerFsInodesFree)
	if r := f.Rlimit; r != nil {
		obs[SignalPIDAvailable] = Observation{Available: r.MaxPID - r.Running, Capacity: r.MaxPID, Time: r.Time}
	}
	return obs
}

func addFs(obs Observations, fs *FsFigures, space, inodes Signal) {
	if fs == nil {
		return
	}
	obs[space] = Observation{Available: int64(fs.Available), Capacity: int64(fs.Capacity), Time: fs.Time}
	if fs.InodesFree != nil && fs.Inodes != nil {
		obs[inodes] = Observation{Available: int64(*fs.InodesFree), Capacity: int64(*fs.Inodes), Time: fs.Time}
	}
}

// quantity formats an observed figure as the kubelet does in messages:
// bytes in binary SI, inodes and pids in decimal.
func quantity(s Signal, n int64) *resource.Quantity {
	if r := signalResource[s]; r == resourceInodes || r == resourcePids {
		return resource.NewQuantity(n, resource.DecimalSI)
	}
	return resource.NewQuantity(n, resource.BinarySI)
}
