package agent

import (
	"github.com/nodeagent/nodeagent/pkg/nodeapi"
	"github.com/nodeagent/nodeagent/pkg/podcgroup"
	"github.com/nodeagent/nodeagent/pkg/stats"
)

// monitoring is what the node API serves on the kubelet's metrics and
// stats paths: the agent's registries, and the resource usage read from
// the CRI and the host.
func monitoring(o Options, p parts) (nodeapi.Monitoring, error) {
	var podCgroups string // flat pods have no cgroup of their own to read
	if cfg := o.Config; cfg.CgroupsPerQOS == nil || *cfg.CgroupsPerQOS {
		podCgroups = podcgroup.KubepodsName(cgroupRoot(cfg))
	}
	sp, err := stats.New(stats.Config{
		NodeName: p.nodeName, Runtime: p.rt, ImageFs: p.rt, RootDir: o.Flags.RootDir, PodLogsDir: o.Config.PodLogsDir,
		PodCgroups: podCgroups, Logger: p.log,
		VolumeStatsAggPeriod: o.Config.VolumeStatsAggPeriod.Duration, NoVolumeStats: o.Config.VolumeStatsAggPeriod.Duration < 0,
	})
	if err != nil {
		return nodeapi.Monitoring{}, err
	}
	return nodeapi.Monitoring{
		Metrics:         p.metrics.Handler(),
		ProbeMetrics:    p.metrics.ProbesHandler(),
		ResourceMetrics: stats.ResourceMetricsHandler(sp, p.log),
		Summary:         stats.SummaryHandler(sp, p.log),
	}, nil
}
