package stats

import (
	"context"
	"errors"
	"sort"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	criv1 "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// sandboxStatsRetry is how long the provider sums containers after the
// runtime said it has no sandbox stats, before asking again (the runtime
// may have been upgraded).
const sandboxStatsRetry = 10 * time.Minute

// podStats is every pod the runtime holds (its ready sandbox, else its
// newest) with its running containers, as the kubelet's CRI stats
// provider lists them.
func (p *Provider) podStats(ctx context.Context, full bool) ([]PodStats, error) {
	rt := p.cfg.Runtime
	sandboxes, err := rt.ListPodSandbox(ctx, nil)
	if err != nil {
		return nil, err
	}
	running := &criv1.ContainerFilter{State: &criv1.ContainerStateValue{State: criv1.ContainerState_CONTAINER_RUNNING}}
	containers, err := rt.ListContainers(ctx, running)
	if err != nil {
		return nil, err
	}
	list, err := rt.ListContainerStats(ctx, &criv1.ContainerStatsFilter{})
	if err != nil {
		return nil, err
	}
	usage := make(map[string]*criv1.ContainerStats, len(list))
	for _, s := range list {
		usage[s.GetAttributes().GetId()] = s
	}
	bySandbox := map[string][]*criv1.Container{}
	for _, c := range containers {
		bySandbox[c.PodSandboxId] = append(bySandbox[c.PodSandboxId], c)
	}
	b := &podBuilder{p: p, full: full, keys: map[string]bool{nodeKey: true}, fs: map[string]*FsStats{}}
	cgroups := p.podCgroupUsage()
	var sbUsage map[string]*criv1.PodSandboxStats
	if cgroups == nil || full {
		sbUsage = p.sandboxStats(ctx) // the pods' network, or their usage without pod cgroups
	}
	var out []PodStats
	for _, sb := range currentSandboxes(sandboxes) {
		cg := cgroups[sb.GetMetadata().GetUid()]
		out = append(out, b.pod(sb, bySandbox[sb.Id], usage, sbUsage[sb.Id], cg))
	}
	p.rate.keep(b.keys)
	sort.Slice(out, func(i, j int) bool {
		a, c := out[i].PodRef, out[j].PodRef
		return a.Namespace < c.Namespace || a.Namespace == c.Namespace && a.Name < c.Name
	})
	return out, nil
}

// currentSandboxes keeps one sandbox per pod: a ready one, else the newest.
func currentSandboxes(all []*criv1.PodSandbox) []*criv1.PodSandbox {
	best := map[string]*criv1.PodSandbox{}
	for _, sb := range all {
		uid := sb.GetMetadata().GetUid()
		cur, ok := best[uid]
		ready := sb.State == criv1.PodSandboxState_SANDBOX_READY
		curReady := ok && cur.State == criv1.PodSandboxState_SANDBOX_READY
		if !ok || (ready && !curReady) || (ready == curReady && sb.CreatedAt > cur.CreatedAt) {
			best[uid] = sb
		}
	}
	out := make([]*criv1.PodSandbox, 0, len(best))
	for _, sb := range best {
		out = append(out, sb)
	}
	return out
}

// podCgroupUsage is every pod cgroup's usage by pod UID, nil when the
// provider was given no pod cgroups.
func (p *Provider) podCgroupUsage() map[string]podCgroupUsage {
	if p.cfg.PodCgroups == "" {
		return nil
	}
	cg := podCgroups{root: p.cfg.Host.Cgroup, kubepods: p.cfg.PodCgroups}
	unified, at := cg.unified(), p.now()
	out := map[string]podCgroupUsage{}
	for uid, name := range cg.find(unified) {
		out[uid] = cg.read(name, unified, at)
	}
	return out
}

// sandboxStats is the runtime's per-pod usage by sandbox ID, or nil when
// it has none or fails: pods then sum their containers. containerd 1.6
// has the call, but fails it as a whole while any sandbox is half made or
// going, and it costs the runtime a cgroup read, a network namespace
// visit and a shim round trip per pod and container.
func (p *Provider) sandboxStats(ctx context.Context) map[string]*criv1.PodSandboxStats {
	p.mu.Lock()
	skip := p.now().Before(p.noSandboxStatsUntil)
	p.mu.Unlock()
	if skip {
		return nil
	}
	list, err := p.cfg.Runtime.ListPodSandboxStats(ctx, &criv1.PodSandboxStatsFilter{})
	if err != nil {
		if isUnimplemented(err) {
			p.mu.Lock()
			p.noSandboxStatsUntil = p.now().Add(sandboxStatsRetry)
			p.mu.Unlock()
			p.log.Info("runtime has no pod sandbox stats; summing containers", "err", err)
		} else {
			p.log.Warn("pod sandbox stats; summing containers", "err", err)
		}
		return nil
	}
	out := make(map[string]*criv1.PodSandboxStats, len(list))
	for _, s := range list {
		out[s.GetAttributes().GetId()] = s
	}
	return out
}

func isUnimplemented(err error) bool {
	var se interface{ GRPCStatus() *status.Status }
	return errors.As(err, &se) && se.GRPCStatus().Code() == codes.Unimplemented
}

// podBuilder converts one summary's pods; keys collects the rate cache
// entries still in use, fs the filesystems already looked up.
type podBuilder struct {
	p    *Provider
	full bool
	keys map[string]bool
	fs   map[string]*FsStats
}

func (b *podBuilder) pod(sb *criv1.PodSandbox, containers []*criv1.Container, usage map[string]*criv1.ContainerStats, sbUsage *criv1.PodSandboxStats, cg podCgroupUsage) PodStats {
	md := sb.GetMetadata()
	ps := PodStats{
		PodRef:     PodReference{Name: md.GetName(), Namespace: md.GetNamespace(), UID: md.GetUid()},
		StartTime:  metav1.NewTime(time.Unix(0, sb.CreatedAt)),
		Containers: []ContainerStats{},
	}
	for _, c := range containers {
		ps.Containers = append(ps.Containers, b.container(c, usage[c.Id]))
	}
	sort.Slice(ps.Containers, func(i, j int) bool { return ps.Containers[i].Name < ps.Containers[j].Name })
	linux := sbUsage.GetLinux()
	if b.full {
		ps.Network = network(linux.GetNetwork(), b.p.stamp)
		at := b.p.now()
		for i := range ps.Containers {
			ps.Containers[i].Logs = b.containerLogs(ps.PodRef, ps.Containers[i].Name, at)
		}
		var ephemeral []VolumeStats
		ps.VolumeStats, ephemeral = b.podVolumes(types.UID(md.GetUid()), at)
		ps.EphemeralStorage = b.podEphemeralStorage(&ps, ephemeral, at)
	}
	cpu, mem := cg.cpu, cg.memory
	if cpu == nil && linux.GetCpu() != nil {
		cpu, mem = linux.Cpu, linux.Memory
	}
	if cpu != nil {
		ps.CPU, ps.Memory = b.cpu("pod/"+sb.Id, cpu), memory(mem, b.p.stamp)
		return ps
	}
	ps.CPU, ps.Memory = sumCPU(ps.Containers), sumMemory(ps.Containers)
	return ps
}

func (b *podBuilder) container(c *criv1.Container, s *criv1.ContainerStats) ContainerStats {
	cs := ContainerStats{Name: c.GetMetadata().GetName(), StartTime: metav1.NewTime(time.Unix(0, c.CreatedAt))}
	if s == nil {
		return cs
	}
	cs.CPU = b.cpu(c.Id, s.Cpu)
	cs.Memory = memory(s.Memory, b.p.stamp)
	cs.Swap = swap(s.Swap, b.p.stamp) // the resource metrics report swap too
	if b.full {
		cs.Rootfs = b.rootfs(s.WritableLayer)
	}
	return cs
}

// cpu converts CRI CPU usage, computing the rate when the runtime does
// not give one.
func (b *podBuilder) cpu(key string, u *criv1.CpuUsage) *CPUStats {
	if u == nil || u.UsageCoreNanoSeconds == nil {
		return nil
	}
	at := b.p.stamp(u.Timestamp)
	total := u.UsageCoreNanoSeconds.Value
	b.keys[key] = true
	rate := b.p.rate.nanoCores(key, at, total)
	if u.UsageNanoCores != nil {
		rate = ptr(u.UsageNanoCores.Value)
	}
	return &CPUStats{Time: metav1.NewTime(at), UsageCoreNanoSeconds: ptr(total), UsageNanoCores: rate}
}

// rootfs is the container's writable layer: its use from the CRI, the
// size of the filesystem holding it from statfs.
func (b *podBuilder) rootfs(u *criv1.FilesystemUsage) *FsStats {
	if u == nil {
		return nil
	}
	at := b.p.stamp(u.Timestamp)
	fs := &FsStats{Time: metav1.NewTime(at)}
	if mp := u.GetFsId().GetMountpoint(); mp != "" {
		if _, seen := b.fs[mp]; !seen {
			b.fs[mp], _ = statfs(mp, at) // nil when it cannot be read: use only
		}
		if whole := b.fs[mp]; whole != nil {
			fs.CapacityBytes, fs.AvailableBytes, fs.Inodes, fs.InodesFree = whole.CapacityBytes, whole.AvailableBytes, whole.Inodes, whole.InodesFree
		}
	}
	fs.UsedBytes, fs.InodesUsed = value(u.UsedBytes), value(u.InodesUsed)
	return fs
}

// stamp is a CRI timestamp (Unix nanoseconds), or now when missing.
func (p *Provider) stamp(ns int64) time.Time {
	if ns == 0 {
		return p.now()
	}
	return time.Unix(0, ns)
}

func value(v *criv1.UInt64Value) *uint64 {
	if v == nil {
		return nil
	}
	return ptr(v.Value)
}
