package agent

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodeagent/nodeagent/pkg/eviction"
	"github.com/nodeagent/nodeagent/pkg/stats"
)

// figures are the eviction manager's numbers from a summary, as the
// kubelet's makeSignalObservations reads them; pods is the kubepods
// cgroup's memory (nil when unknown: no allocatableMemory.available).
func figures(s *stats.Summary, pods *eviction.MemoryFigures) eviction.Figures {
	n := s.Node
	f := eviction.Figures{Pods: pods}
	if m := n.Memory; m != nil && m.AvailableBytes != nil && m.WorkingSetBytes != nil {
		f.Memory = &eviction.MemoryFigures{Time: m.Time.Time, Available: *m.AvailableBytes, WorkingSet: *m.WorkingSetBytes}
	}
	f.NodeFs = fsFigures(n.Fs)
	if rt := n.Runtime; rt != nil {
		f.ImageFs, f.ContainerFs = fsFigures(rt.ImageFs), fsFigures(rt.ContainerFs)
	}
	if r := n.Rlimit; r != nil && r.MaxPID != nil && r.NumOfRunningProcesses != nil {
		f.Rlimit = &eviction.RlimitFigures{Time: r.Time.Time, MaxPID: *r.MaxPID, Running: *r.NumOfRunningProcesses}
	}
	return f
}

func fsFigures(fs *stats.FsStats) *eviction.FsFigures {
	if fs == nil || fs.AvailableBytes == nil || fs.CapacityBytes == nil {
		return nil
	}
	return &eviction.FsFigures{Time: fs.Time.Time, Available: *fs.AvailableBytes, Capacity: *fs.CapacityBytes, InodesFree: fs.InodesFree, Inodes: fs.Inodes}
}

// evictionPods are the active pods with their usage from the summary
// (no usage: ranked first, as the kubelet's).
func evictionPods(active []*v1.Pod, s *stats.Summary) []eviction.Pod {
	byUID := make(map[types.UID]*stats.PodStats, len(s.Pods))
	for i := range s.Pods {
		byUID[types.UID(s.Pods[i].PodRef.UID)] = &s.Pods[i]
	}
	out := make([]eviction.Pod, 0, len(active))
	for _, pod := range active {
		p := eviction.PodFromAPI(pod)
		if ps := byUID[pod.UID]; ps != nil {
			p.Stats = podUsage(ps)
		}
		out = append(out, p)
	}
	return out
}

func podUsage(ps *stats.PodStats) *eviction.PodStats {
	u := &eviction.PodStats{}
	if m := ps.Memory; m != nil {
		u.MemoryWorkingSet = m.WorkingSetBytes
	}
	for _, c := range ps.Containers {
		cs := eviction.ContainerStats{Name: c.Name}
		if c.Memory != nil {
			cs.MemoryWorkingSet = c.Memory.WorkingSetBytes
		}
		if c.Rootfs != nil {
			cs.Rootfs = &eviction.FsUsage{UsedBytes: c.Rootfs.UsedBytes, InodesUsed: c.Rootfs.InodesUsed}
		}
		if c.Logs != nil {
			cs.Logs = &eviction.FsUsage{UsedBytes: c.Logs.UsedBytes, InodesUsed: c.Logs.InodesUsed}
		}
		u.Containers = append(u.Containers, cs)
	}
	for _, v := range ps.VolumeStats {
		u.Volumes = append(u.Volumes, eviction.VolumeStats{Name: v.Name, FsUsage: eviction.FsUsage{UsedBytes: v.UsedBytes, InodesUsed: v.InodesUsed}})
	}
	if es := ps.EphemeralStorage; es != nil {
		u.EphemeralStorageUsed = es.UsedBytes
	}
	return u
}

// kubepodsMemory reads the kubepods cgroup's working set (usage less
// inactive file pages, as cAdvisor) and its limit, the node allocatable:
// Available is the limit less the working set, as the summary's pods
// system container. Cgroup v1 (the memory hierarchy) or v2.
func kubepodsMemory(mountRoot, name string, now time.Time) (*eviction.MemoryFigures, error) {
	usage, limit, inactive, err := readV1Memory(filepath.Join(mountRoot, "memory", name))
	if errors.Is(err, os.ErrNotExist) {
		usage, limit, inactive, err = readV2Memory(filepath.Join(mountRoot, name))
	}
	if err != nil {
		return nil, fmt.Errorf("kubepods memory: %w", err)
	}
	ws := usage
	if inactive < ws {
		ws -= inactive
	} else {
		ws = 0
	}
	return eviction.NodeMemory(now, limit, ws), nil
}

func readV1Memory(dir string) (usage, limit, inactive uint64, err error) {
	if usage, err = readCgroupUint(filepath.Join(dir, "memory.usage_in_bytes")); err != nil {
		return
	}
	if limit, err = readCgroupUint(filepath.Join(dir, "memory.limit_in_bytes")); err != nil {
		return
	}
	inactive, err = statValue(filepath.Join(dir, "memory.stat"), "total_inactive_file")
	return
}

func readV2Memory(dir string) (usage, limit, inactive uint64, err error) {
	if usage, err = readCgroupUint(filepath.Join(dir, "memory.current")); err != nil {
		return
	}
	if limit, err = readCgroupUint(filepath.Join(dir, "memory.max")); err != nil {
		return
	}
	inactive, err = statValue(filepath.Join(dir, "memory.stat"), "inactive_file")
	return
}

// readCgroupUint reads a number; "max" (no limit) is the largest.
func readCgroupUint(path string) (uint64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	s := strings.TrimSpace(string(b))
	if s == "max" {
		return ^uint64(0), nil
	}
	return strconv.ParseUint(s, 10, 64)
}

func statValue(path, key string) (uint64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), " ")
		if ok && k == key {
			return strconv.ParseUint(v, 10, 64)
		}
	}
	return 0, sc.Err()
}

// sameDevice says whether two paths are on one filesystem (the kubelet's
// dedicated image filesystem test: imagefs device != nodefs device).
func sameDevice(a, b string) (bool, error) {
	var sa, sb syscall.Stat_t
	if err := syscall.Stat(a, &sa); err != nil {
		return false, err
	}
	if err := syscall.Stat(b, &sb); err != nil {
		return false, err
	}
	return sa.Dev == sb.Dev, nil
}
