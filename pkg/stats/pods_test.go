package stats

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	criv1 "k8s.io/cri-api/pkg/apis/runtime/v1"
	critest "k8s.io/cri-api/pkg/apis/testing"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// fakeCRI is a runtime with pod "shop/web" (a ready sandbox and an older
// dead one; containers app and side running, an old one exited) and pod
// "shop/done" (no ready sandbox, nothing running).
func fakeCRI() *critest.FakeRuntimeService {
	rt := critest.NewFakeRuntimeService()
	sb := func(id, name, uid string, state criv1.PodSandboxState, created time.Time) *critest.FakePodSandbox {
		return &critest.FakePodSandbox{PodSandboxStatus: criv1.PodSandboxStatus{Id: id, State: state, CreatedAt: created.UnixNano(),
			Metadata: &criv1.PodSandboxMetadata{Name: name, Namespace: "shop", Uid: uid}}}
	}
	rt.SetFakeSandboxes([]*critest.FakePodSandbox{
		sb("sb-web", "web", "uid-web", criv1.PodSandboxState_SANDBOX_READY, t0),
		sb("sb-web-old", "web", "uid-web", criv1.PodSandboxState_SANDBOX_NOTREADY, t0.Add(-time.Hour)),
		sb("sb-done", "done", "uid-done", criv1.PodSandboxState_SANDBOX_NOTREADY, t0),
	})
	ctr := func(id, name, sandbox string, state criv1.ContainerState) *critest.FakeContainer {
		return &critest.FakeContainer{SandboxID: sandbox, ContainerStatus: criv1.ContainerStatus{Id: id, State: state,
			CreatedAt: t0.Add(time.Second).UnixNano(), Metadata: &criv1.ContainerMetadata{Name: name}}}
	}
	rt.SetFakeContainers([]*critest.FakeContainer{
		ctr("c-app", "app", "sb-web", criv1.ContainerState_CONTAINER_RUNNING),
		ctr("c-side", "side", "sb-web", criv1.ContainerState_CONTAINER_RUNNING),
		ctr("c-old", "app", "sb-web", criv1.ContainerState_CONTAINER_EXITED),
	})
	stat := func(id string, cpuNs, nanoCores, ws uint64) *criv1.ContainerStats {
		s := &criv1.ContainerStats{
			Attributes: &criv1.ContainerAttributes{Id: id},
			Cpu:        &criv1.CpuUsage{Timestamp: t0.Add(time.Minute).UnixNano(), UsageCoreNanoSeconds: u64(cpuNs)},
			Memory:     &criv1.MemoryUsage{Timestamp: t0.Add(time.Minute).UnixNano(), WorkingSetBytes: u64(ws), UsageBytes: u64(2 * ws)},
			WritableLayer: &criv1.FilesystemUsage{Timestamp: t0.Add(time.Minute).UnixNano(),
				FsId: &criv1.FilesystemIdentifier{Mountpoint: "/"}, UsedBytes: u64(4096), InodesUsed: u64(3)},
		}
		if nanoCores > 0 {
			s.Cpu.UsageNanoCores = u64(nanoCores)
		}
		return s
	}
	rt.SetFakeContainerStats([]*criv1.ContainerStats{
		stat("c-app", 3e9, 250e6, 10<<20),
		stat("c-side", 1e9, 0, 5<<20),
		stat("c-old", 9e9, 0, 1),
	})
	return rt
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func newTestProvider(t *testing.T, rt *critest.FakeRuntimeService) *Provider {
	t.Helper()
	img := critest.NewFakeImageService()
	img.SetFakeFilesystemUsage([]*criv1.FilesystemUsage{{Timestamp: t0.UnixNano(),
		FsId: &criv1.FilesystemIdentifier{Mountpoint: t.TempDir()}, UsedBytes: u64(1 << 30), InodesUsed: u64(500)}})
	p, err := New(Config{NodeName: "node1", Runtime: rt, ImageFs: img, RootDir: t.TempDir(),
		Host: fakeHost(t, map[string]string{"proc/stat": procStat, "proc/meminfo": meminfo}), Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	p.now = func() time.Time { return t0.Add(2 * time.Minute) }
	return p
}

func TestPodsFromContainerStatsWithoutSandboxStats(t *testing.T) {
	rt := fakeCRI()
	rt.InjectError("ListPodSandboxStats", status.Error(codes.Unimplemented, "not implemented"))
	p := newTestProvider(t, rt)
	s, err := p.Summary(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Pods) != 2 || s.Pods[0].PodRef.Name != "done" || s.Pods[1].PodRef != (PodReference{"web", "shop", "uid-web"}) {
		t.Fatalf("pods: %+v", s.Pods)
	}
	if done := s.Pods[0]; len(done.Containers) != 0 || done.CPU != nil || done.Memory != nil {
		t.Errorf("a pod with nothing running has usage: %+v", done)
	}
	web := s.Pods[1]
	if !web.StartTime.Time.Equal(t0) || len(web.Containers) != 2 || web.Containers[0].Name != "app" || web.Containers[1].Name != "side" {
		t.Fatalf("web: start %v containers %+v", web.StartTime, web.Containers)
	}
	app := web.Containers[0]
	if *app.CPU.UsageCoreNanoSeconds != 3e9 || *app.CPU.UsageNanoCores != 250e6 || *app.Memory.WorkingSetBytes != 10<<20 ||
		!app.StartTime.Time.Equal(t0.Add(time.Second)) || !app.CPU.Time.Time.Equal(t0.Add(time.Minute)) {
		t.Errorf("app: %+v cpu %+v memory %+v", app, app.CPU, app.Memory)
	}
	if app.Rootfs == nil || *app.Rootfs.UsedBytes != 4096 || app.Rootfs.CapacityBytes == nil {
		t.Errorf("app rootfs: %+v", app.Rootfs)
	}
	// Summed: the runtime gave no rate for side, so the pod's rate is app's.
	if *web.CPU.UsageCoreNanoSeconds != 4e9 || *web.Memory.WorkingSetBytes != 15<<20 || *web.Memory.UsageBytes != 30<<20 {
		t.Errorf("web: cpu %+v memory %+v", web.CPU, web.Memory)
	}
	if s.Node.NodeName != "node1" || s.Node.CPU == nil || s.Node.Memory == nil || s.Node.Fs == nil || s.Node.Swap == nil {
		t.Errorf("node: %+v", s.Node)
	}
	if fs := s.Node.Runtime.ImageFs; fs == nil || *fs.UsedBytes != 1<<30 || *fs.InodesUsed != 500 || fs.CapacityBytes == nil {
		t.Errorf("image fs: %+v", fs)
	}

	// The runtime said it has none: not asked again for a while.
	if _, err := p.CPUAndMemory(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := count(rt.GetCalls(), "ListPodSandboxStats"); n != 1 {
		t.Errorf("ListPodSandboxStats asked %d times", n)
	}
}

func TestPodsFromSandboxStats(t *testing.T) {
	rt := fakeCRI()
	rt.SetFakePodSandboxStats([]*criv1.PodSandboxStats{{
		Attributes: &criv1.PodSandboxAttributes{Id: "sb-web"},
		Linux: &criv1.LinuxPodSandboxStats{
			Cpu:    &criv1.CpuUsage{Timestamp: t0.UnixNano(), UsageCoreNanoSeconds: u64(7e9), UsageNanoCores: u64(1e6)},
			Memory: &criv1.MemoryUsage{Timestamp: t0.UnixNano(), WorkingSetBytes: u64(99)},
			Network: &criv1.NetworkUsage{Timestamp: t0.UnixNano(),
				DefaultInterface: &criv1.NetworkInterfaceUsage{Name: "eth0", RxBytes: u64(10)},
				Interfaces:       []*criv1.NetworkInterfaceUsage{{Name: "eth0", RxBytes: u64(10)}}},
		},
	}})
	s, err := newTestProvider(t, rt).Summary(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	web := s.Pods[1]
	if *web.CPU.UsageCoreNanoSeconds != 7e9 || *web.Memory.WorkingSetBytes != 99 || web.Network == nil || web.Network.Name != "eth0" {
		t.Errorf("web: cpu %+v memory %+v network %+v", web.CPU, web.Memory, web.Network)
	}
}

func TestCPUAndMemoryOnlyAndRates(t *testing.T) {
	rt := fakeCRI()
	p := newTestProvider(t, rt)
	s, err := p.CPUAndMemory(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	side := s.Pods[1].Containers[1]
	if side.Rootfs != nil || s.Node.Fs != nil || s.Node.Network != nil || s.Node.Runtime != nil {
		t.Errorf("cpu-and-memory summary has more: %+v %+v", side, s.Node)
	}
	if side.CPU.UsageNanoCores != nil {
		t.Errorf("a rate from a single sample: %d", *side.CPU.UsageNanoCores)
	}
	// A second sample 10 s later with 1 more core-second: 0.1 core.
	rt.SetFakeContainerStats([]*criv1.ContainerStats{{
		Attributes: &criv1.ContainerAttributes{Id: "c-side"},
		Cpu:        &criv1.CpuUsage{Timestamp: t0.Add(time.Minute + 10*time.Second).UnixNano(), UsageCoreNanoSeconds: u64(2e9)},
	}})
	s, err = p.CPUAndMemory(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if r := s.Pods[1].Containers[1].CPU.UsageNanoCores; r == nil || *r != 1e8 {
		t.Errorf("side rate: %v", r)
	}
}

func TestListErrorsFailTheSummary(t *testing.T) {
	rt := fakeCRI()
	rt.InjectError("ListContainerStats", status.Error(codes.Unavailable, "down"))
	if _, err := newTestProvider(t, rt).Summary(context.Background()); err == nil {
		t.Error("no error")
	}
}

func count(calls []string, name string) int {
	n := 0
	for _, c := range calls {
		if c == name {
			n++
		}
	}
	return n
}

// As the kubelet's CRI stats provider, a scrape asks the runtime for all
// its containers' usage in one ListContainerStats (and one
// ListPodSandboxStats), never once per container: mid-burst, per-container
// calls are what cost the runtime seconds.
func TestOneStatsCallPerScrape(t *testing.T) {
	rt := fakeCRI()
	rt.SetFakePodSandboxStats(nil)
	p := newTestProvider(t, rt)
	const scrapes = 3
	for range scrapes {
		if _, err := p.CPUAndMemory(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	calls := rt.GetCalls()
	for name, want := range map[string]int{"ListContainerStats": scrapes, "ListPodSandboxStats": scrapes, "ContainerStats": 0, "PodSandboxStats": 0, "ContainerStatus": 0} {
		if n := count(calls, name); n != want {
			t.Errorf("%s called %d times in %d scrapes, want %d (calls %v)", name, n, scrapes, want, calls)
		}
	}
}
