package agent

import (
	"log/slog"

	"github.com/nodeagent/nodeagent/pkg/agentconfig"
	"github.com/nodeagent/nodeagent/pkg/logrotate"
	"github.com/nodeagent/nodeagent/pkg/runtime"
)

// newLogRotation builds the container log rotation from the agent's
// configuration. Its Run returns nil once ctx ends (failures are logged
// per pass); the runtime connection must outlive it.
func newLogRotation(cfg *agentconfig.Config, rt *runtime.Client, log *slog.Logger) (*logrotate.Manager, error) {
	return logrotate.New(logrotate.Config{
		Runtime:     rt,
		MaxSize:     cfg.ContainerLogMaxBytes(),
		MaxFiles:    int(*cfg.ContainerLogMaxFiles),
		Workers:     int(*cfg.ContainerLogMaxWorkers),
		Interval:    cfg.ContainerLogMonitorInterval.Duration,
		CallTimeout: cfg.RuntimeRequestTimeout.Duration,
		Logger:      log,
	})
}
