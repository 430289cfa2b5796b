package stats

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Host reads the node's own usage from procfs and the cgroup v1 root, the
// files cAdvisor reads for the kubelet's root container.
type Host struct {
	Proc   string // default /proc
	Cgroup string // default /sys/fs/cgroup
}

func (h Host) withDefaults() Host {
	if h.Proc == "" {
		h.Proc = "/proc"
	}
	if h.Cgroup == "" {
		h.Cgroup = "/sys/fs/cgroup"
	}
	return h
}

// userHZ is the kernel's USER_HZ, the unit of /proc/stat: 100 on every
// Linux architecture Kubernetes supports.
const userHZ = 100

// cpuUsage is the node's cumulative CPU time in core-nanoseconds: the root
// cpuacct cgroup's, else the busy time in /proc/stat (no cgroup v1).
func (h Host) cpuUsage() (uint64, error) {
	if v, err := readUint(filepath.Join(h.Cgroup, "cpuacct", "cpuacct.usage")); err == nil {
		return v, nil
	}
	b, err := os.ReadFile(filepath.Join(h.Proc, "stat"))
	if err != nil {
		return 0, fmt.Errorf("node cpu: %w", err)
	}
	return parseProcStatCPU(b)
}

// parseProcStatCPU sums the busy columns of /proc/stat's "cpu" line: all
// but idle and iowait (guest time is already in user).
func parseProcStatCPU(b []byte) (uint64, error) {
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 9 || f[0] != "cpu" {
			continue
		}
		var busy uint64
		for i, col := range f[1:9] { // user nice system idle iowait irq softirq steal
			if i == 3 || i == 4 {
				continue
			}
			v, err := strconv.ParseUint(col, 10, 64)
			if err != nil {
				return 0, fmt.Errorf("/proc/stat cpu: %w", err)
			}
			busy += v
		}
		return busy * uint64(time.Second/userHZ), nil
	}
	return 0, fmt.Errorf("/proc/stat: no cpu line")
}

// bootTime is when the node booted (/proc/stat btime), the node's
// startTime in the summary.
func (h Host) bootTime() (time.Time, error) {
	b, err := os.ReadFile(filepath.Join(h.Proc, "stat"))
	if err != nil {
		return time.Time{}, fmt.Errorf("boot time: %w", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "btime "); ok {
			sec, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil {
				return time.Time{}, fmt.Errorf("boot time: %w", err)
			}
			return time.Unix(sec, 0), nil
		}
	}
	return time.Time{}, fmt.Errorf("boot time: no btime in /proc/stat")
}

// memory is the node's memory use. As cAdvisor on cgroup v1, usage is the
// root memory cgroup's and the working set is usage less inactive file
// pages; available is capacity less the working set. Without the cgroup
// files, /proc/meminfo gives the same figures for the whole machine.
func (h Host) memory() (*MemoryStats, *SwapStats, error) {
	info, err := readKeyValues(filepath.Join(h.Proc, "meminfo"), 1024) // meminfo is in kB
	if err != nil {
		return nil, nil, fmt.Errorf("node memory: %w", err)
	}
	total := info["MemTotal"]
	m := &MemoryStats{}
	if usage, err := readUint(filepath.Join(h.Cgroup, "memory", "memory.usage_in_bytes")); err == nil {
		st, err := readKeyValues(filepath.Join(h.Cgroup, "memory", "memory.stat"), 1)
		if err != nil {
			return nil, nil, fmt.Errorf("node memory: %w", err)
		}
		m.UsageBytes, m.RSSBytes = ptr(usage), ptr(st["total_rss"])
		m.PageFaults, m.MajorPageFaults = ptr(st["total_pgfault"]), ptr(st["total_pgmajfault"])
		m.WorkingSetBytes = ptr(sub(usage, st["total_inactive_file"]))
	} else {
		usage := sub(total, info["MemFree"])
		m.UsageBytes = ptr(usage)
		m.WorkingSetBytes = ptr(sub(usage, info["Inactive(file)"]))
	}
	m.AvailableBytes = ptr(sub(total, *m.WorkingSetBytes))
	swap := &SwapStats{SwapAvailableBytes: ptr(info["SwapFree"]), SwapUsageBytes: ptr(sub(info["SwapTotal"], info["SwapFree"]))}
	return m, swap, nil
}

// rlimit is the PID limit and the number of processes (threads included,
// as the kernel counts them in /proc/loadavg).
func (h Host) rlimit() (*RlimitStats, error) {
	pidMax, err := readUint(filepath.Join(h.Proc, "sys", "kernel", "pid_max"))
	if err != nil {
		return nil, fmt.Errorf("pid max: %w", err)
	}
	b, err := os.ReadFile(filepath.Join(h.Proc, "loadavg"))
	if err != nil {
		return nil, fmt.Errorf("process count: %w", err)
	}
	f := strings.Fields(string(b))
	if len(f) < 4 {
		return nil, fmt.Errorf("process count: short /proc/loadavg %q", b)
	}
	_, total, _ := strings.Cut(f[3], "/")
	n, err := strconv.ParseInt(total, 10, 64)
	if err != nil {
		return nil, fmt.Errorf("process count: %w", err)
	}
	return &RlimitStats{MaxPID: ptr(int64(pidMax)), NumOfRunningProcesses: ptr(n)}, nil
}

// readKeyValues reads "key value [unit]" or "key: value kB" lines,
// multiplying values by scale.
func readKeyValues(path string, scale uint64) (map[string]uint64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	out := map[string]uint64{}
	s := bufio.NewScanner(bytes.NewReader(b))
	for s.Scan() {
		f := strings.Fields(s.Text())
		if len(f) < 2 {
			continue
		}
		if v, err := strconv.ParseUint(f[1], 10, 64); err == nil {
			out[strings.TrimSuffix(f[0], ":")] = v * scale
		}
	}
	return out, s.Err()
}

func readUint(path string) (uint64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	return v, nil
}

// sub is a-b, floored at 0 (counters read at slightly different times).
func sub(a, b uint64) uint64 {
	if b > a {
		return 0
	}
	return a - b
}

func ptr[T any](v T) *T { return &v }
