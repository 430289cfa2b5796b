package metrics

import (
	"testing"
	"time"
)

func TestEvictionMetrics(t *testing.T) {
	m, _ := newTestMetrics()
	e, err := NewEviction(m)
	if err != nil {
		t.Fatal(err)
	}
	e.PodEvicted("memory.available")
	e.StatsAge("memory.available", 3*time.Second)
	fams := scrape(t, m.Handler())
	sig := map[string]string{"eviction_signal": "memory.available"}
	if v := series(t, fams, "kubelet_evictions", sig).GetCounter().GetValue(); v != 1 {
		t.Errorf("kubelet_evictions %v", v)
	}
	if h := series(t, fams, "kubelet_eviction_stats_age_seconds", sig).GetHistogram(); h.GetSampleCount() != 1 || h.GetSampleSum() != 3 {
		t.Errorf("stats age %v", h)
	}
	if fams["kubelet_evictions"].GetHelp() != "[ALPHA] Cumulative number of pod evictions by eviction signal" {
		t.Errorf("help %q", fams["kubelet_evictions"].GetHelp())
	}
}
