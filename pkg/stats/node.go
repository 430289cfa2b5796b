package stats

import (
	"context"
	"errors"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// nodeKey is the node's key in the rate cache.
const nodeKey = "/"

// nodeStats reads the node's usage. A figure that cannot be read is left
// out (and logged) rather than failing the whole summary.
func (p *Provider) nodeStats(ctx context.Context, full bool) NodeStats {
	now := p.now()
	ts := metav1.NewTime(now)
	n := NodeStats{NodeName: p.cfg.NodeName}
	h := p.cfg.Host
	if boot, err := h.bootTime(); err == nil {
		n.StartTime = metav1.NewTime(boot)
	}
	if usage, err := h.cpuUsage(); err != nil {
		p.log.Debug("node cpu", "err", err)
	} else {
		n.CPU = &CPUStats{Time: ts, UsageCoreNanoSeconds: ptr(usage), UsageNanoCores: p.rate.nanoCores(nodeKey, now, usage)}
	}
	if mem, swap, err := h.memory(); err != nil {
		p.log.Debug("node memory", "err", err)
	} else {
		mem.Time, swap.Time = ts, ts
		n.Memory, n.Swap = mem, swap
	}
	if full {
		p.nodeExtras(ctx, &n, ts)
	}
	return n
}

// nodeExtras fills the network, filesystems and process limits.
func (p *Provider) nodeExtras(ctx context.Context, n *NodeStats, ts metav1.Time) {
	h := p.cfg.Host
	if net, err := h.network(); err != nil {
		p.log.Debug("node network", "err", err)
	} else {
		net.Time = ts
		n.Network = net
	}
	if p.cfg.RootDir != "" {
		if fs, err := statfs(p.cfg.RootDir, ts.Time); err != nil {
			p.log.Debug("node filesystem", "err", err)
		} else {
			n.Fs = fs
		}
	}
	if rl, err := h.rlimit(); err != nil {
		p.log.Debug("node rlimit", "err", err)
	} else {
		rl.Time = ts
		n.Rlimit = rl
	}
	if fs := p.imageFs(ctx); fs != nil {
		// One filesystem for images and writable layers, as containerd
		// keeps them unless configured otherwise: the kubelet then reports
		// the same stats for both.
		n.Runtime = &RuntimeStats{ImageFs: fs, ContainerFs: fs}
	}
}

// imageFs is the runtime's image filesystem: its use by images from the
// CRI, its size from statfs on the mountpoint the CRI names.
func (p *Provider) imageFs(ctx context.Context) *FsStats {
	if p.cfg.ImageFs == nil {
		return nil
	}
	resp, err := p.cfg.ImageFs.ImageFsInfo(ctx)
	if err != nil || len(resp.GetImageFilesystems()) == 0 {
		p.log.Debug("image filesystem", "err", err)
		return nil
	}
	u := resp.GetImageFilesystems()[0]
	fs := &FsStats{Time: metav1.NewTime(p.now())}
	if mp := u.GetFsId().GetMountpoint(); mp != "" {
		if st, err := statfs(mp, p.now()); err == nil {
			fs = st
		}
	}
	fs.UsedBytes = ptr(u.GetUsedBytes().GetValue())
	if u.GetInodesUsed() != nil {
		fs.InodesUsed = ptr(u.GetInodesUsed().GetValue())
	}
	return fs
}

// ImageFsStats is the image filesystem as the summary reports it (the
// kubelet's ImageFsStats, which image garbage collection reads).
func (p *Provider) ImageFsStats(ctx context.Context) (*FsStats, error) {
	fs := p.imageFs(ctx)
	if fs == nil {
		return nil, errors.New("image filesystem stats are not available")
	}
	return fs, nil
}
