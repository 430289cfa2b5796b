package podtrace

import (
	"context"
	"fmt"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"k8s.io/apimachinery/pkg/types"
	tracingapi "k8s.io/component-base/tracing/api/v1"
)

// RootSpan is the name of the span that holds one pod's steps.
const RootSpan = "PodStart"

// tracerName is the instrumentation scope of the spans.
const tracerName = "github.com/nodeagent/nodeagent/pkg/podtrace"

// NewOTLPProvider builds the tracer provider the kubelet builds from its
// tracing configuration (component-base's NewProvider): nil without one;
// an OTLP gRPC exporter to endpoint (the exporter's default, localhost:4317,
// when unset), insecure, batched; spans sampled at samplingRatePerMillion,
// following a sampled parent, never when the rate is unset or 0. The
// resource names the service "kubelet" on host nodeName, as the kubelet's.
func NewOTLPProvider(ctx context.Context, cfg *tracingapi.TracingConfiguration, nodeName string) (*sdktrace.TracerProvider, error) {
	if cfg == nil {
		return nil, nil
	}
	opts := []otlptracegrpc.Option{otlptracegrpc.WithInsecure()}
	if cfg.Endpoint != nil {
		opts = append(opts, otlptracegrpc.WithEndpoint(*cfg.Endpoint))
	}
	exp, err := otlptracegrpc.New(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("OTLP trace exporter: %w", err)
	}
	res := resource.NewSchemaless(attribute.String("service.name", "kubelet"), attribute.String("host.name", nodeName))
	return sdktrace.NewTracerProvider(
		sdktrace.WithSampler(Sampler(cfg)),
		sdktrace.WithBatcher(exp),
		sdktrace.WithResource(res),
	), nil
}

// Sampler is the kubelet's: parent-based, with samplingRatePerMillion
// for root spans (none sampled when unset or 0).
func Sampler(cfg *tracingapi.TracingConfiguration) sdktrace.Sampler {
	s := sdktrace.NeverSample()
	if cfg != nil && cfg.SamplingRatePerMillion != nil && *cfg.SamplingRatePerMillion > 0 {
		s = sdktrace.TraceIDRatioBased(float64(*cfg.SamplingRatePerMillion) / 1e6)
	}
	return sdktrace.ParentBased(s)
}

// OTelSink turns each pod's steps into spans under one PodStart span per
// pod, with the steps' own start and end times.
type OTelSink struct {
	tracer trace.Tracer
	mu     sync.Mutex
	roots  map[types.UID]*rootSpan
}

type rootSpan struct {
	ctx  context.Context
	span trace.Span
	end  time.Time
}

// NewOTelSink exports through tp.
func NewOTelSink(tp trace.TracerProvider) *OTelSink {
	return &OTelSink{tracer: tp.Tracer(tracerName), roots: map[types.UID]*rootSpan{}}
}

// Step exports one step as a span, starting the pod's root span with its
// first step.
func (o *OTelSink) Step(pod PodRef, s Step) {
	o.mu.Lock()
	defer o.mu.Unlock()
	r := o.roots[pod.UID]
	if r == nil {
		// A pod's start is a trace of its own: no request context leads here.
		ctx, span := o.tracer.Start(context.Background(), RootSpan, trace.WithTimestamp(s.Start),
			trace.WithAttributes(podAttrs(pod)...))
		r = &rootSpan{ctx: ctx, span: span}
		o.roots[pod.UID] = r
	}
	attrs := append(podAttrs(pod), attribute.String("detail", s.Detail))
	if s.Container != "" {
		attrs = append(attrs, attribute.String("k8s.container.name", s.Container))
	}
	for k, v := range s.Attrs {
		attrs = append(attrs, attribute.String(k, v))
	}
	_, span := o.tracer.Start(r.ctx, s.Name, trace.WithTimestamp(s.Start), trace.WithAttributes(attrs...))
	if s.Error != "" {
		span.SetStatus(codes.Error, s.Error)
	}
	span.End(trace.WithTimestamp(s.End))
	if s.End.After(r.end) {
		r.end = s.End
	}
}

// Done ends the pod's root span at its last step's end.
func (o *OTelSink) Done(pod PodRef) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if r := o.roots[pod.UID]; r != nil {
		r.span.End(trace.WithTimestamp(r.end))
		delete(o.roots, pod.UID)
	}
}

func podAttrs(pod PodRef) []attribute.KeyValue {
	return []attribute.KeyValue{
		attribute.String("k8s.namespace.name", pod.Namespace),
		attribute.String("k8s.pod.name", pod.Name),
		attribute.String("k8s.pod.uid", string(pod.UID)),
	}
}
