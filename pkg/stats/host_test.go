package stats

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// fakeHost writes files under a temporary /proc and /sys/fs/cgroup.
func fakeHost(t *testing.T, files map[string]string) Host {
	t.Helper()
	root := t.TempDir()
	for name, content := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return Host{Proc: filepath.Join(root, "proc"), Cgroup: filepath.Join(root, "cgroup")}
}

const procStat = `cpu  100 20 30 4000 50 6 7 8 9 0
cpu0 50 10 15 2000 25 3 3 4 0 0
intr 12345
btime 1767225600
processes 4242
`

const meminfo = `MemTotal:        2048000 kB
MemFree:          512000 kB
MemAvailable:    1024000 kB
Inactive(file):   256000 kB
SwapTotal:        100000 kB
SwapFree:          60000 kB
`

func TestNodeCPUFromCgroupOrProcStat(t *testing.T) {
	h := fakeHost(t, map[string]string{"proc/stat": procStat, "cgroup/cpuacct/cpuacct.usage": "987654321\n"})
	if v, err := h.cpuUsage(); err != nil || v != 987654321 {
		t.Errorf("cgroup: %d, %v", v, err)
	}
	h = fakeHost(t, map[string]string{"proc/stat": procStat})
	// user+nice+system+irq+softirq+steal = 171 ticks of 10 ms.
	if v, err := h.cpuUsage(); err != nil || v != 171*uint64(10*time.Millisecond) {
		t.Errorf("/proc/stat: %d, %v", v, err)
	}
	if boot, err := h.bootTime(); err != nil || boot.Unix() != 1767225600 {
		t.Errorf("boot: %v, %v", boot, err)
	}
}

func TestNodeMemoryFromCgroupOrMeminfo(t *testing.T) {
	h := fakeHost(t, map[string]string{
		"proc/meminfo":                        meminfo,
		"cgroup/memory/memory.usage_in_bytes": "1000000000\n",
		"cgroup/memory/memory.stat":           "cache 5\ntotal_rss 300000000\ntotal_inactive_file 200000000\ntotal_pgfault 77\ntotal_pgmajfault 3\n",
	})
	m, swap, err := h.memory()
	if err != nil {
		t.Fatal(err)
	}
	if *m.UsageBytes != 1e9 || *m.WorkingSetBytes != 8e8 || *m.RSSBytes != 3e8 || *m.PageFaults != 77 || *m.MajorPageFaults != 3 {
		t.Errorf("cgroup memory: %+v", m)
	}
	if *m.AvailableBytes != 2048000*1024-8e8 {
		t.Errorf("available: %d", *m.AvailableBytes)
	}
	if *swap.SwapUsageBytes != 40000*1024 || *swap.SwapAvailableBytes != 60000*1024 {
		t.Errorf("swap: %+v", swap)
	}

	h = fakeHost(t, map[string]string{"proc/meminfo": meminfo})
	m, _, err = h.memory()
	if err != nil {
		t.Fatal(err)
	}
	if *m.UsageBytes != (2048000-512000)*1024 || *m.WorkingSetBytes != (2048000-512000-256000)*1024 {
		t.Errorf("meminfo memory: usage %d working set %d", *m.UsageBytes, *m.WorkingSetBytes)
	}
}

func TestNodeNetworkAndRlimit(t *testing.T) {
	h := fakeHost(t, map[string]string{
		"proc/net/dev": `Inter-|   Receive                                                |  Transmit
 face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed
    lo:  500       5    0    0    0     0          0         0      500       5    0    0    0     0       0          0
  ens3: 1000      10    1    0    0     0          0         0     2000      20    2    0    0     0       0          0
vethab12: 9     1    0    0    0     0          0         0        9       1    0    0    0     0       0          0
  eth0: 3000      30    3    0    0     0          0         0     4000      40    4    0    0     0       0          0
`,
		"proc/sys/kernel/pid_max": "4194304\n",
		"proc/loadavg":            "0.10 0.20 0.30 2/345 6789\n",
	})
	n, err := h.network()
	if err != nil {
		t.Fatal(err)
	}
	if n.Name != "eth0" || *n.RxBytes != 3000 || *n.TxErrors != 4 || len(n.Interfaces) != 2 {
		t.Errorf("network: %+v (%d interfaces)", n.InterfaceStats, len(n.Interfaces))
	}
	rl, err := h.rlimit()
	if err != nil || *rl.MaxPID != 4194304 || *rl.NumOfRunningProcesses != 345 {
		t.Errorf("rlimit: %+v, %v", rl, err)
	}
}

func TestRates(t *testing.T) {
	r := newRates()
	t0 := time.Unix(1000, 0)
	if v := r.nanoCores("c", t0, 1e9); v != nil {
		t.Errorf("first sample: %d", *v)
	}
	if v := r.nanoCores("c", t0.Add(2*time.Second), 2e9); v == nil || *v != 5e8 {
		t.Errorf("half a core: %v", v)
	}
	if v := r.nanoCores("c", t0.Add(3*time.Second), 1); v != nil {
		t.Errorf("counter reset: %d", *v)
	}
	r.keep(map[string]bool{})
	if len(r.last) != 0 {
		t.Errorf("samples kept: %v", r.last)
	}
}
