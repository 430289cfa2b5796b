package podtrace

import (
	"context"
	"testing"
	"time"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	tracingapi "k8s.io/component-base/tracing/api/v1"
	"k8s.io/utils/ptr"
)

func TestOTelSinkExportsStepsUnderOnePodSpan(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp), sdktrace.WithSampler(Sampler(&tracingapi.TracingConfiguration{SamplingRatePerMillion: ptr.To[int32](1000000)})))
	defer tp.Shutdown(context.Background())
	l := New(Config{Sink: NewOTelSink(tp)})
	p := testPod("a")
	l.Record(p, Step{Name: StepSeen, Start: t0, End: t0})
	l.Record(p, Step{Name: StepPull, Container: "c", Start: t0.Add(time.Second), End: t0.Add(2 * time.Second), Attrs: map[string]string{"cache.hit": "true"}})
	l.Record(p, Step{Name: StepStart, Container: "c", Start: t0.Add(2 * time.Second), End: t0.Add(3 * time.Second), Error: "boom"})
	l.PodGone(p.UID)

	spans := exp.GetSpans()
	if len(spans) != 4 {
		t.Fatalf("%d spans, want 3 steps and the pod's", len(spans))
	}
	root := spans[3]
	if root.Name != RootSpan || !root.StartTime.Equal(t0) || !root.EndTime.Equal(t0.Add(3*time.Second)) {
		t.Errorf("root %s %v..%v", root.Name, root.StartTime, root.EndTime)
	}
	for _, s := range spans[:3] {
		if s.Parent.SpanID() != root.SpanContext.SpanID() || s.SpanContext.TraceID() != root.SpanContext.TraceID() {
			t.Errorf("span %s is not the pod span's child", s.Name)
		}
	}
	pull := spans[1]
	if pull.Name != StepPull || !pull.StartTime.Equal(t0.Add(time.Second)) || pull.EndTime.Sub(pull.StartTime) != time.Second {
		t.Errorf("pull span %s %v..%v", pull.Name, pull.StartTime, pull.EndTime)
	}
	attrs := map[string]string{}
	for _, a := range pull.Attributes {
		attrs[string(a.Key)] = a.Value.AsString()
	}
	if attrs["cache.hit"] != "true" || attrs["k8s.container.name"] != "c" || attrs["k8s.pod.name"] != "a" {
		t.Errorf("pull attributes %v", attrs)
	}
	if spans[2].Status.Code != codes.Error || spans[2].Status.Description != "boom" {
		t.Errorf("failed step status %+v", spans[2].Status)
	}
}

func TestSamplerIsTheKubelets(t *testing.T) {
	for _, tc := range []struct {
		cfg  *tracingapi.TracingConfiguration
		want string
	}{
		{&tracingapi.TracingConfiguration{}, "ParentBased{root:AlwaysOffSampler"},
		{&tracingapi.TracingConfiguration{SamplingRatePerMillion: ptr.To[int32](0)}, "ParentBased{root:AlwaysOffSampler"},
		{&tracingapi.TracingConfiguration{SamplingRatePerMillion: ptr.To[int32](500000)}, "ParentBased{root:TraceIDRatioBased{0.5}"},
	} {
		if got := Sampler(tc.cfg).Description(); len(got) < len(tc.want) || got[:len(tc.want)] != tc.want {
			t.Errorf("sampler %q, want prefix %q", got, tc.want)
		}
	}
}

func TestNoProviderWithoutTracing(t *testing.T) {
	tp, err := NewOTLPProvider(context.Background(), nil, "n")
	if tp != nil || err != nil {
		t.Errorf("got %v, %v; want none", tp, err)
	}
}
