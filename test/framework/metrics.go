package framework

import (
	"context"
	"fmt"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"k8s.io/client-go/kubernetes"
)

// ParseMetrics parses a Prometheus text exposition into its families.
func ParseMetrics(text string) (map[string]*dto.MetricFamily, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		return nil, fmt.Errorf("parse metrics: %w", err)
	}
	return families, nil
}

// APIServerMetrics scrapes the API server's /metrics with cs's credential.
func APIServerMetrics(ctx context.Context, cs kubernetes.Interface) (map[string]*dto.MetricFamily, error) {
	raw, err := cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("scrape /metrics: %w", err)
	}
	return ParseMetrics(string(raw))
}

// SampleSum adds up counter values and histogram sample counts of the
// family's series whose labels include match.
func SampleSum(families map[string]*dto.MetricFamily, name string, match map[string]string) float64 {
	var sum float64
	for _, m := range families[name].GetMetric() {
		labels := map[string]string{}
		for _, lp := range m.GetLabel() {
			labels[lp.GetName()] = lp.GetValue()
		}
		ok := true
		for k, v := range match {
			ok = ok && labels[k] == v
		}
		switch {
		case !ok:
		case m.Counter != nil:
			sum += m.GetCounter().GetValue()
		case m.Histogram != nil:
			sum += float64(m.GetHistogram().GetSampleCount())
		}
	}
	return sum
}
