package stats

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	criv1 "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// The conversions take stamp to turn CRI timestamps (Unix nanoseconds,
// 0 when the runtime sets none) into times.

func memory(u *criv1.MemoryUsage, stamp func(int64) time.Time) *MemoryStats {
	if u == nil {
		return nil
	}
	return &MemoryStats{
		Time:            metav1.NewTime(stamp(u.Timestamp)),
		AvailableBytes:  value(u.AvailableBytes),
		UsageBytes:      value(u.UsageBytes),
		WorkingSetBytes: value(u.WorkingSetBytes),
		RSSBytes:        value(u.RssBytes),
		PageFaults:      value(u.PageFaults),
		MajorPageFaults: value(u.MajorPageFaults),
	}
}

func swap(u *criv1.SwapUsage, stamp func(int64) time.Time) *SwapStats {
	if u == nil {
		return nil
	}
	return &SwapStats{
		Time:               metav1.NewTime(stamp(u.Timestamp)),
		SwapAvailableBytes: value(u.SwapAvailableBytes),
		SwapUsageBytes:     value(u.SwapUsageBytes),
	}
}

func network(u *criv1.NetworkUsage, stamp func(int64) time.Time) *NetworkStats {
	if u == nil {
		return nil
	}
	n := &NetworkStats{Time: metav1.NewTime(stamp(u.Timestamp))}
	if d := u.DefaultInterface; d != nil {
		n.InterfaceStats = iface(d)
	}
	for _, i := range u.Interfaces {
		n.Interfaces = append(n.Interfaces, iface(i))
	}
	return n
}

func iface(i *criv1.NetworkInterfaceUsage) InterfaceStats {
	return InterfaceStats{Name: i.Name, RxBytes: value(i.RxBytes), RxErrors: value(i.RxErrors),
		TxBytes: value(i.TxBytes), TxErrors: value(i.TxErrors)}
}

// sumCPU is a pod's CPU as the sum of its containers' (the runtime has
// no sandbox stats); nil when no container reports any.
func sumCPU(cs []ContainerStats) *CPUStats {
	var out *CPUStats
	for _, c := range cs {
		if c.CPU == nil || c.CPU.UsageCoreNanoSeconds == nil {
			continue
		}
		if out == nil {
			out = &CPUStats{Time: c.CPU.Time, UsageCoreNanoSeconds: ptr(uint64(0))}
		}
		if c.CPU.Time.After(out.Time.Time) {
			out.Time = c.CPU.Time
		}
		*out.UsageCoreNanoSeconds += *c.CPU.UsageCoreNanoSeconds
		out.UsageNanoCores = add(out.UsageNanoCores, c.CPU.UsageNanoCores)
	}
	return out
}

// sumMemory is a pod's memory as the sum of its containers'; available
// bytes do not add up and are left out.
func sumMemory(cs []ContainerStats) *MemoryStats {
	var out *MemoryStats
	for _, c := range cs {
		m := c.Memory
		if m == nil {
			continue
		}
		if out == nil {
			out = &MemoryStats{Time: m.Time}
		}
		if m.Time.After(out.Time.Time) {
			out.Time = m.Time
		}
		out.UsageBytes = add(out.UsageBytes, m.UsageBytes)
		out.WorkingSetBytes = add(out.WorkingSetBytes, m.WorkingSetBytes)
		out.RSSBytes = add(out.RSSBytes, m.RSSBytes)
		out.PageFaults = add(out.PageFaults, m.PageFaults)
		out.MajorPageFaults = add(out.MajorPageFaults, m.MajorPageFaults)
	}
	return out
}

// add sums optional values: nil only when both are.
func add(a, b *uint64) *uint64 {
	switch {
	case a == nil && b == nil:
		return nil
	case a == nil:
		return ptr(*b)
	case b == nil:
		return a
	}
	return ptr(*a + *b)
}
