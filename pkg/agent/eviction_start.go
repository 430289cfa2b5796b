package agent

import (
	"context"
	"fmt"

	"github.com/nodeagent/nodeagent/pkg/eviction"
	"github.com/nodeagent/nodeagent/pkg/imagegc"
	"github.com/nodeagent/nodeagent/pkg/metrics"
	"github.com/nodeagent/nodeagent/pkg/stats"
)

// cgroupMountRoot is where the cgroup hierarchies are mounted.
const cgroupMountRoot = "/sys/fs/cgroup"

// newEviction builds the eviction manager from the configuration: the
// policy for the node's disks, its own stats provider (the summary's
// figures), the reclaim through the pod manager and image GC.
func newEviction(ctx context.Context, o Options, p parts, gc *imagegc.Manager) (*evictionLoop, error) {
	cfg := o.Config
	policy, err := eviction.NewPolicy(cfg.Eviction(), cfg.EnforceNodeAllocatable, disks(ctx, o, p), *cfg.LocalStorageCapacityIsolation)
	if err != nil {
		return nil, fmt.Errorf("eviction: %w", err)
	}
	sp, err := stats.New(stats.Config{
		NodeName: p.nodeName, Runtime: p.rt, ImageFs: p.rt, RootDir: o.Flags.RootDir, PodLogsDir: cfg.PodLogsDir, Logger: p.log,
		VolumeStatsAggPeriod: cfg.VolumeStatsAggPeriod.Duration, NoVolumeStats: cfg.VolumeStatsAggPeriod.Duration < 0,
	})
	if err != nil {
		return nil, err
	}
	em, err := metrics.NewEviction(p.metrics)
	if err != nil {
		return nil, err
	}
	d := evictionDeps{
		stats: sp, pods: p.mgr, images: gc, metrics: em,
		mountRoot: cgroupMountRoot, kubepods: kubepodsName(cgroupRoot(cfg), cfg.CgroupsPerQOS != nil && !*cfg.CgroupsPerQOS),
	}
	if p.api != nil {
		d.recorder, d.onChange = p.api.Events(), p.api.Node.Trigger
	}
	return newEvictionLoop(policy, p.pressure, d, p.nodeName, o.Flags.RootDir, p.log), nil
}

// disks tells whether images are on a filesystem of their own (the
// runtime's image filesystem on another device than the root dir's).
func disks(ctx context.Context, o Options, p parts) eviction.Disks {
	ctx, cancel := context.WithTimeout(ctx, sandboxImageTimeout)
	defer cancel()
	resp, err := p.rt.ImageFsInfo(ctx)
	if err != nil || len(resp.GetImageFilesystems()) == 0 {
		p.log.Warn("eviction: image filesystem unknown; taken as the node's", "err", err)
		return eviction.Disks{}
	}
	same, err := sameDevice(o.Flags.RootDir, resp.GetImageFilesystems()[0].GetFsId().GetMountpoint())
	if err != nil {
		p.log.Warn("eviction: image filesystem device unknown; taken as the node's", "err", err)
		return eviction.Disks{}
	}
	return eviction.Disks{DedicatedImageFs: !same}
}
