package stats

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func serve(t *testing.T, h http.Handler, target string) *httptest.ResponseRecorder {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, target, nil))
	return rec
}

func parse(t *testing.T, body string) map[string]*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("parse: %v\n%s", err, body)
	}
	return fams
}

func labels(m *dto.Metric) map[string]string {
	out := map[string]string{}
	for _, l := range m.GetLabel() {
		out[l.GetName()] = l.GetValue()
	}
	return out
}

func TestResourceMetrics(t *testing.T) {
	rt := fakeCRI()
	rt.InjectError("ListPodSandboxStats", status.Error(codes.Unimplemented, "no"))
	rec := serve(t, ResourceMetricsHandler(newTestProvider(t, rt), quietLogger()), "/metrics/resource")
	if rec.Code != http.StatusOK {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
	fams := parse(t, rec.Body.String())
	for name, typ := range map[string]dto.MetricType{
		"node_cpu_usage_seconds_total":       dto.MetricType_COUNTER,
		"node_memory_working_set_bytes":      dto.MetricType_GAUGE,
		"container_cpu_usage_seconds_total":  dto.MetricType_COUNTER,
		"container_memory_working_set_bytes": dto.MetricType_GAUGE,
		"container_start_time_seconds":       dto.MetricType_GAUGE,
		"pod_cpu_usage_seconds_total":        dto.MetricType_COUNTER,
		"pod_memory_working_set_bytes":       dto.MetricType_GAUGE,
		"resource_scrape_error":              dto.MetricType_GAUGE,
		"process_start_time_seconds":         dto.MetricType_GAUGE,
	} {
		if f := fams[name]; f == nil || f.GetType() != typ {
			t.Errorf("%s: %v, want type %v", name, f, typ)
		}
	}
	if h := fams["container_cpu_usage_seconds_total"].GetHelp(); h != "[STABLE] Cumulative cpu time consumed by the container in core-seconds" {
		t.Errorf("help: %q", h)
	}
	var app *dto.Metric
	for _, m := range fams["container_cpu_usage_seconds_total"].GetMetric() {
		if l := labels(m); l["container"] == "app" && l["pod"] == "web" && l["namespace"] == "shop" {
			app = m
		}
	}
	if app == nil || app.GetCounter().GetValue() != 3 || app.GetTimestampMs() != t0.Add(60e9).UnixMilli() {
		t.Errorf("app cpu: %v", app)
	}
	if n := len(fams["container_cpu_usage_seconds_total"].GetMetric()); n != 2 {
		t.Errorf("%d container series, want the 2 running", n)
	}
	if pods := fams["pod_cpu_usage_seconds_total"].GetMetric(); len(pods) != 1 || pods[0].GetCounter().GetValue() != 4 {
		t.Errorf("pod cpu: %v", pods)
	}
	if v := fams["resource_scrape_error"].GetMetric()[0].GetGauge().GetValue(); v != 0 {
		t.Errorf("scrape error: %v", v)
	}
}

type failing struct{}

func (failing) CPUAndMemory(context.Context) (*Summary, error) {
	return nil, errors.New("runtime down")
}
func (failing) Summary(context.Context) (*Summary, error) { return nil, errors.New("runtime down") }

func TestResourceScrapeError(t *testing.T) {
	fams := parse(t, serve(t, ResourceMetricsHandler(failing{}, quietLogger()), "/metrics/resource").Body.String())
	if v := fams["resource_scrape_error"].GetMetric()[0].GetGauge().GetValue(); v != 1 {
		t.Errorf("resource_scrape_error: %v", v)
	}
	if fams["node_cpu_usage_seconds_total"] != nil {
		t.Error("node metrics without stats")
	}
}

func TestSummaryHandler(t *testing.T) {
	h := SummaryHandler(newTestProvider(t, fakeCRI()), quietLogger())
	rec := serve(t, h, "/stats/summary")
	if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != "application/json" {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
	// Read it as a client of the upstream API would: by JSON field names.
	var s struct {
		Node struct {
			NodeName string `json:"nodeName"`
			CPU      struct {
				UsageCoreNanoSeconds *uint64 `json:"usageCoreNanoSeconds"`
			} `json:"cpu"`
			Memory struct {
				WorkingSetBytes *uint64 `json:"workingSetBytes"`
			} `json:"memory"`
			Fs      map[string]any `json:"fs"`
			Runtime struct {
				ImageFs map[string]any `json:"imageFs"`
			} `json:"runtime"`
		} `json:"node"`
		Pods []struct {
			PodRef     map[string]string `json:"podRef"`
			Containers []struct {
				Name   string         `json:"name"`
				Memory map[string]any `json:"memory"`
				Rootfs map[string]any `json:"rootfs"`
			} `json:"containers"`
		} `json:"pods"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &s); err != nil {
		t.Fatal(err)
	}
	if s.Node.NodeName != "node1" || s.Node.CPU.UsageCoreNanoSeconds == nil || s.Node.Memory.WorkingSetBytes == nil ||
		s.Node.Fs["capacityBytes"] == nil || s.Node.Runtime.ImageFs["usedBytes"] == nil {
		t.Errorf("node: %s", rec.Body)
	}
	if len(s.Pods) != 2 || s.Pods[1].PodRef["uid"] != "uid-web" || s.Pods[1].Containers[0].Memory["workingSetBytes"] == nil ||
		s.Pods[1].Containers[0].Rootfs["usedBytes"] == nil {
		t.Errorf("pods: %s", rec.Body)
	}

	only := serve(t, h, "/stats/summary?only_cpu_and_memory=true").Body.String()
	if strings.Contains(only, "rootfs") || strings.Contains(only, "imageFs") {
		t.Errorf("only_cpu_and_memory has more: %s", only)
	}
	if rec := serve(t, SummaryHandler(failing{}, quietLogger()), "/stats/summary"); rec.Code != http.StatusInternalServerError {
		t.Errorf("failing provider: %d", rec.Code)
	}
}
