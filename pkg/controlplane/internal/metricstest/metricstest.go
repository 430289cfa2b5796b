package metricstest

import (
	"testing"

	dto "github.com/prometheus/client_model/go"
	"k8s.io/component-base/metrics"
)

// Sum adds up the counter values or histogram sample counts of name's
// series whose labels include match.
func Sum(t testing.TB, g metrics.Gatherer, name string, match map[string]string) float64 {
	t.Helper()
	var sum float64
	for _, m := range series(t, g, name, match) {
		sum += value(m)
	}
	return sum
}

// By is Sum grouped by the value of one label.
func By(t testing.TB, g metrics.Gatherer, name, label string, match map[string]string) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	for _, m := range series(t, g, name, match) {
		for _, lp := range m.GetLabel() {
			if lp.GetName() == label {
				out[lp.GetValue()] += value(m)
			}
		}
	}
	return out
}

func series(t testing.TB, g metrics.Gatherer, name string, match map[string]string) []*dto.Metric {
	t.Helper()
	families, err := g.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	var out []*dto.Metric
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			if matches(m, match) {
				out = append(out, m)
			}
		}
	}
	return out
}

func matches(m *dto.Metric, match map[string]string) bool {
	found := 0
	for _, lp := range m.GetLabel() {
		if v, ok := match[lp.GetName()]; ok {
			if v != lp.GetValue() {
				return false
			}
			found++
		}
	}
	return found == len(match)
}

func value(m *dto.Metric) float64 {
	switch {
	case m.Counter != nil:
		return m.GetCounter().GetValue()
	case m.Histogram != nil:
		return float64(m.GetHistogram().GetSampleCount())
	case m.Gauge != nil:
		return m.GetGauge().GetValue()
	}
	return 0
}
