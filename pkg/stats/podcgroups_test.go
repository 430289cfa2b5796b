package stats

import (
	"context"
	"testing"
)

// podCgroupFiles is pod uid-web's cgroup (Burstable) in a cgroup v1 tree,
// with a memory limit, and a Guaranteed pod without a sandbox.
var podCgroupFilesV1 = map[string]string{
	"cgroup/cpuacct/na/kubepods/burstable/poduid-web/cpuacct.usage":          "5000000000\n",
	"cgroup/memory/na/kubepods/burstable/poduid-web/memory.usage_in_bytes":   "3000\n",
	"cgroup/memory/na/kubepods/burstable/poduid-web/memory.limit_in_bytes":   "10000\n",
	"cgroup/memory/na/kubepods/burstable/poduid-web/memory.stat":             "cache 9\ntotal_rss 1500\ntotal_inactive_file 1000\ntotal_pgfault 7\ntotal_pgmajfault 1\n",
	"cgroup/cpuacct/na/kubepods/podother/cpuacct.usage":                      "1\n",
	"cgroup/memory/na/kubepods/besteffort/poduid-gone/memory.usage_in_bytes": "1\n",
}

var podCgroupFilesV2 = map[string]string{
	"cgroup/cgroup.controllers":                               "cpu memory pids\n",
	"cgroup/na/kubepods/besteffort/poduid-web/cpu.stat":       "usage_usec 2500000\nuser_usec 2000000\nsystem_usec 500000\n",
	"cgroup/na/kubepods/besteffort/poduid-web/memory.current": "4096\n",
	"cgroup/na/kubepods/besteffort/poduid-web/memory.max":     "max\n",
	"cgroup/na/kubepods/besteffort/poduid-web/memory.stat":    "anon 2048\nfile 1024\ninactive_file 1000\npgfault 3\npgmajfault 0\n",
}

func cgroupProvider(t *testing.T, files map[string]string) (*Provider, func() int) {
	t.Helper()
	rt := fakeCRI()
	p := newTestProvider(t, rt)
	for k, v := range map[string]string{"proc/stat": procStat, "proc/meminfo": meminfo} {
		files[k] = v
	}
	p.cfg.Host = fakeHost(t, files)
	p.cfg.PodCgroups = "/na/kubepods"
	return p, func() int { return count(rt.GetCalls(), "ListPodSandboxStats") }
}

// As the kubelet without PodAndContainerStatsFromCRI (cAdvisor reads the
// pod cgroups): the resource metrics' pod usage is the pod cgroup's,
// working set = usage - inactive file, and the runtime is not asked for
// sandbox stats.
func TestPodUsageFromCgroupV1(t *testing.T) {
	p, sandboxStatsCalls := cgroupProvider(t, podCgroupFilesV1)
	s, err := p.CPUAndMemory(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	web := s.Pods[1]
	if web.CPU == nil || *web.CPU.UsageCoreNanoSeconds != 5e9 {
		t.Fatalf("web cpu: %+v", web.CPU)
	}
	m := web.Memory
	if m == nil || *m.UsageBytes != 3000 || *m.WorkingSetBytes != 2000 || *m.RSSBytes != 1500 || *m.PageFaults != 7 ||
		*m.MajorPageFaults != 1 || m.AvailableBytes == nil || *m.AvailableBytes != 8000 {
		t.Errorf("web memory: %+v", m)
	}
	if n := sandboxStatsCalls(); n != 0 {
		t.Errorf("ListPodSandboxStats asked %d times", n)
	}
	// The pod without a ready sandbox and running containers has no cgroup here: nothing to report.
	if done := s.Pods[0]; done.CPU != nil || done.Memory != nil {
		t.Errorf("done: %+v", done)
	}
}

func TestPodUsageFromCgroupV2(t *testing.T) {
	p, _ := cgroupProvider(t, podCgroupFilesV2)
	s, err := p.CPUAndMemory(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	web := s.Pods[1]
	if web.CPU == nil || *web.CPU.UsageCoreNanoSeconds != 2.5e9 {
		t.Fatalf("web cpu: %+v", web.CPU)
	}
	if m := web.Memory; m == nil || *m.UsageBytes != 4096 || *m.WorkingSetBytes != 3096 || *m.RSSBytes != 2048 || m.AvailableBytes != nil {
		t.Errorf("web memory: %+v", m)
	}
}

// The full summary still asks for sandbox stats, for the pods' network;
// CPU and memory stay the cgroup's.
func TestSummaryKeepsCgroupUsage(t *testing.T) {
	p, sandboxStatsCalls := cgroupProvider(t, podCgroupFilesV1)
	s, err := p.Summary(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if web := s.Pods[1]; web.CPU == nil || *web.CPU.UsageCoreNanoSeconds != 5e9 {
		t.Fatalf("web cpu: %+v", web.CPU)
	}
	if n := sandboxStatsCalls(); n != 1 {
		t.Errorf("ListPodSandboxStats asked %d times", n)
	}
}
