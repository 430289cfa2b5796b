package agent

import (
	"context"
	"time"

	"github.com/nodeagent/nodeagent/pkg/imagegc"
	"github.com/nodeagent/nodeagent/pkg/stats"
)

// sandboxImageTimeout bounds the runtime status read for the sandbox
// image.
const sandboxImageTimeout = 10 * time.Second

// newImageGC builds the image garbage collection from the configuration;
// its events go on the Node when joined.
func newImageGC(ctx context.Context, o Options, p parts) (*imagegc.Manager, error) {
	cfg := o.Config
	fs, err := stats.New(stats.Config{NodeName: p.nodeName, Runtime: p.rt, ImageFs: p.rt, Logger: p.log})
	if err != nil {
		return nil, err
	}
	sctx, cancel := context.WithTimeout(ctx, sandboxImageTimeout)
	defer cancel()
	sandbox, err := imagegc.SandboxImage(sctx, p.rt)
	if err != nil {
		p.log.Warn("sandbox image unknown: image GC relies on the runtime pinning it", "err", err)
	}
	gc := imagegc.Config{
		Policy: imagegc.Policy{
			HighThresholdPercent: int(*cfg.ImageGCHighThresholdPercent), LowThresholdPercent: int(*cfg.ImageGCLowThresholdPercent),
			MinAge: cfg.ImageMinimumGCAge.Duration, MaxAge: cfg.ImageMaximumGCAge.Duration,
		},
		Images: p.rt, Containers: p.rt, FsStats: fs, SandboxImage: sandbox,
		Metrics: p.metrics, NodeName: p.nodeName, Period: o.Flags.ImageGCPeriod, Logger: p.log,
	}
	if p.api != nil {
		gc.Recorder = p.api.Events()
	}
	return imagegc.New(gc)
}
