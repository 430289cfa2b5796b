package agent

import (
	"context"
	"log/slog"

	"github.com/nodeagent/nodeagent/pkg/agentconfig"
	"github.com/nodeagent/nodeagent/pkg/logrotate"
	"github.com/nodeagent/nodeagent/pkg/runtime"
)

// startLogRotation runs the container log rotation until ctx ends; done
// closes once it has stopped, so that the runtime connection outlives it.
func startLogRotation(ctx context.Context, cfg *agentconfig.Config, rt *runtime.Client, log *slog.Logger) (done <-chan struct{}, err error) {
	m, err := logrotate.New(logrotate.Config{
		Runtime:     rt,
		MaxSize:     cfg.ContainerLogMaxBytes(),
		MaxFiles:    int(*cfg.ContainerLogMaxFiles),
		Workers:     int(*cfg.ContainerLogMaxWorkers),
		Interval:    cfg.ContainerLogMonitorInterval.Duration,
		CallTimeout: cfg.RuntimeRequestTimeout.Duration,
		Logger:      log,
	})
	if err != nil {
		return nil, err
	}
	ch := make(chan struct{})
	go func() {
		defer close(ch)
		m.Run(ctx) // returns nil once ctx ends; failures are logged per pass
	}()
	return ch, nil
}
