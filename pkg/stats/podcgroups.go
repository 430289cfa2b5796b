package stats

import (
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	criv1 "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// podCgroupTiers are where pod cgroups sit under kubepods: Guaranteed
// pods directly, the others under their QoS tier (the kubelet's layout).
var podCgroupTiers = []string{"", "burstable", "besteffort"}

// v1Unlimited: a cgroup v1 memory limit at or above it is no limit (the
// kernel shows PAGE_COUNTER_MAX pages, rounded to the page size).
const v1Unlimited = uint64(1) << 62

// podCgroupUsage is one pod cgroup's CPU and memory, as cAdvisor reads it
// for the kubelet's pod stats, in the CRI's shapes so that the sandbox
// stats' conversions and rate cache apply.
type podCgroupUsage struct {
	cpu    *criv1.CpuUsage
	memory *criv1.MemoryUsage
}

// podCgroups reads the pod cgroups under the kubepods cgroup (a cgroupfs
// path such as /nodeagent/kubepods).
type podCgroups struct {
	root     string // the cgroupfs mount, /sys/fs/cgroup
	kubepods string
}

func (c podCgroups) unified() bool {
	_, err := os.Stat(filepath.Join(c.root, "cgroup.controllers"))
	return err == nil
}

// find maps pod UIDs to their cgroup's name, from one look at each QoS
// tier (the CRI does not say which tier a sandbox's cgroup parent is in).
func (c podCgroups) find(unified bool) map[string]string {
	base := c.root
	if !unified {
		base = filepath.Join(c.root, "cpuacct")
	}
	out := map[string]string{}
	for _, tier := range podCgroupTiers {
		dir := path.Join(c.kubepods, tier)
		entries, err := os.ReadDir(filepath.Join(base, dir))
		if err != nil {
			continue
		}
		for _, e := range entries {
			if uid, ok := strings.CutPrefix(e.Name(), "pod"); ok && e.IsDir() {
				out[uid] = path.Join(dir, e.Name())
			}
		}
	}
	return out
}

// read is the usage of cgroup name; nil parts when a file is missing (the
// pod is going). Working set is usage less inactive file pages, as
// cAdvisor and the eviction manager count it.
func (c podCgroups) read(name string, unified bool, at time.Time) podCgroupUsage {
	if unified {
		return c.readV2(filepath.Join(c.root, name), at)
	}
	return c.readV1(name, at)
}

func (c podCgroups) readV1(name string, at time.Time) podCgroupUsage {
	var u podCgroupUsage
	if ns, err := readUint(filepath.Join(c.root, "cpuacct", name, "cpuacct.usage")); err == nil {
		u.cpu = &criv1.CpuUsage{Timestamp: at.UnixNano(), UsageCoreNanoSeconds: u64(ns)}
	}
	mem := filepath.Join(c.root, "memory", name)
	usage, err := readUint(filepath.Join(mem, "memory.usage_in_bytes"))
	if err != nil {
		return u
	}
	st, err := readKeyValues(filepath.Join(mem, "memory.stat"), 1)
	if err != nil {
		return u
	}
	u.memory = memoryStats(at, usage, st["total_inactive_file"], st["total_rss"], st["total_pgfault"], st["total_pgmajfault"])
	if limit, err := readUint(filepath.Join(mem, "memory.limit_in_bytes")); err == nil && limit < v1Unlimited {
		u.memory.AvailableBytes = u64(sub(limit, u.memory.WorkingSetBytes.Value))
	}
	return u
}

func (c podCgroups) readV2(dir string, at time.Time) podCgroupUsage {
	var u podCgroupUsage
	if st, err := readKeyValues(filepath.Join(dir, "cpu.stat"), 1); err == nil {
		if usec, ok := st["usage_usec"]; ok {
			u.cpu = &criv1.CpuUsage{Timestamp: at.UnixNano(), UsageCoreNanoSeconds: u64(usec * uint64(time.Microsecond))}
		}
	}
	usage, err := readUint(filepath.Join(dir, "memory.current"))
	if err != nil {
		return u
	}
	st, err := readKeyValues(filepath.Join(dir, "memory.stat"), 1)
	if err != nil {
		return u
	}
	u.memory = memoryStats(at, usage, st["inactive_file"], st["anon"], st["pgfault"], st["pgmajfault"])
	if limit, err := readUint(filepath.Join(dir, "memory.max")); err == nil { // "max" does not parse: no limit
		u.memory.AvailableBytes = u64(sub(limit, u.memory.WorkingSetBytes.Value))
	}
	return u
}

func memoryStats(at time.Time, usage, inactiveFile, rss, faults, majorFaults uint64) *criv1.MemoryUsage {
	return &criv1.MemoryUsage{Timestamp: at.UnixNano(), UsageBytes: u64(usage), WorkingSetBytes: u64(sub(usage, inactiveFile)),
		RssBytes: u64(rss), PageFaults: u64(faults), MajorPageFaults: u64(majorFaults)}
}

func u64(v uint64) *criv1.UInt64Value { return &criv1.UInt64Value{Value: v} }
