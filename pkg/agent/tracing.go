package agent

import (
	"context"
	"log/slog"
	"time"

	"github.com/nodeagent/nodeagent/pkg/agentconfig"
	"github.com/nodeagent/nodeagent/pkg/podtrace"
)

// tracingShutdownTimeout bounds the export of the spans still batched
// when the agent stops.
const tracingShutdownTimeout = 5 * time.Second

// newTraces is the pods' start step log, exporting its steps as spans
// when the configuration has tracing; stop flushes the exporter.
func newTraces(ctx context.Context, cfg *agentconfig.Config, nodeName string, log *slog.Logger) (*podtrace.Log, func(), error) {
	tp, err := podtrace.NewOTLPProvider(ctx, cfg.Tracing, nodeName)
	if err != nil || tp == nil {
		return podtrace.New(podtrace.Config{}), func() {}, err
	}
	rate := int32(0)
	if cfg.Tracing.SamplingRatePerMillion != nil {
		rate = *cfg.Tracing.SamplingRatePerMillion
	}
	log.Info("exporting pod start traces over OTLP", "endpoint", endpointOrDefault(cfg), "samplingRatePerMillion", rate)
	stop := func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), tracingShutdownTimeout)
		defer cancel()
		if err := tp.Shutdown(sctx); err != nil {
			log.Warn("flush pod start traces", "err", err)
		}
	}
	return podtrace.New(podtrace.Config{Sink: podtrace.NewOTelSink(tp)}), stop, nil
}

func endpointOrDefault(cfg *agentconfig.Config) string {
	if cfg.Tracing.Endpoint != nil {
		return *cfg.Tracing.Endpoint
	}
	return "localhost:4317"
}
