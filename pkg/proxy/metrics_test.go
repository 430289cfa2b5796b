package proxy

import (
	"context"
	"errors"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/component-base/metrics"
)

// gathered is the one series of family name in reg, which must carry
// ip_family="IPv4".
func gathered(t *testing.T, reg metrics.KubeRegistry, name string) *dto.Metric {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
		if len(f.GetMetric()) != 1 {
			t.Fatalf("%s: %d series, want 1", name, len(f.GetMetric()))
		}
		m := f.GetMetric()[0]
		if l := m.GetLabel(); len(l) != 1 || l[0].GetName() != "ip_family" || l[0].GetValue() != "IPv4" {
			t.Errorf("%s: labels %v, want ip_family=IPv4", name, l)
		}
		return m
	}
	t.Fatalf("no series of %s", name)
	return nil
}

func newMetricsProxier(t *testing.T) (*Proxier, *recordingNFT, metrics.KubeRegistry) {
	t.Helper()
	m := NewMetrics()
	reg := metrics.NewKubeRegistry()
	if err := m.Register(reg); err != nil {
		t.Fatalf("Register: %v", err)
	}
	p, _, rec := newFakeProxier(t, Config{Clock: newTestClock(), Metrics: m})
	return p, rec, reg
}

func TestMetricsHaveUpstreamNames(t *testing.T) {
	p, _, reg := newMetricsProxier(t)
	if _, err := p.Sync(context.Background(), nil, nil); err != nil {
		t.Fatalf("Sync: %v", err)
	}
	p.cfg.Metrics.cleanupFailed()
	now := time.Now()
	p.cfg.Metrics.programmed(now, []time.Time{now.Add(-time.Second)})
	p.cfg.Metrics.synced(&SyncResult{}, time.Now(), errors.New("failed"))
	fams, err := reg.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	got := map[string]*dto.MetricFamily{}
	for _, f := range fams {
		got[f.GetName()] = f
	}
	for name, typ := range map[string]dto.MetricType{
		"kubeproxy_sync_proxy_rules_duration_seconds":                dto.MetricType_HISTOGRAM,
		"kubeproxy_sync_full_proxy_rules_duration_seconds":           dto.MetricType_HISTOGRAM,
		"kubeproxy_sync_partial_proxy_rules_duration_seconds":        dto.MetricType_HISTOGRAM,
		"kubeproxy_sync_proxy_rules_last_timestamp_seconds":          dto.MetricType_GAUGE,
		"kubeproxy_sync_proxy_rules_nftables_sync_failures_total":    dto.MetricType_COUNTER,
		"kubeproxy_sync_proxy_rules_nftables_cleanup_failures_total": dto.MetricType_COUNTER,
		"kubeproxy_network_programming_duration_seconds":             dto.MetricType_HISTOGRAM,
	} {
		f := got[name]
		if f == nil {
			t.Errorf("missing %s", name)
			continue
		}
		if f.GetType() != typ {
			t.Errorf("%s: type %v, want %v", name, f.GetType(), typ)
		}
	}
	if h := got["kubeproxy_sync_proxy_rules_duration_seconds"].GetHelp(); h != "[ALPHA] SyncProxyRules latency in seconds" {
		t.Errorf("help %q", h)
	}
	// Upstream's buckets: 15 exponential ones from 1 ms; 0, 0.25, 0.5,
	// then 1 to 59 s, 60 to 115 s, 2 to 5 min.
	if n := len(gathered(t, reg, "kubeproxy_sync_proxy_rules_duration_seconds").GetHistogram().GetBucket()); n != 15 {
		t.Errorf("sync duration buckets: %d, want 15", n)
	}
	if n := len(gathered(t, reg, "kubeproxy_network_programming_duration_seconds").GetHistogram().GetBucket()); n != 81 {
		t.Errorf("network programming buckets: %d, want 81", n)
	}
}

// Every sync is timed, as full or partial; successful ones set the
// timestamp, failed ones count.
func TestSyncUpdatesMetrics(t *testing.T) {
	p, rec, reg := newMetricsProxier(t)
	clk := p.cfg.Clock.(interface{ Step(time.Duration) })
	ctx := context.Background()
	svcs, eps := twoServices()
	// The fake clock moves only between syncs: make nft take 250 ms.
	rec.onRun = func() { clk.Step(250 * time.Millisecond) }

	if _, err := p.Sync(ctx, svcs, eps); err != nil { // full
		t.Fatalf("Sync: %v", err)
	}
	if _, err := p.Sync(ctx, svcs, eps[1:]); err != nil { // partial
		t.Fatalf("Sync: %v", err)
	}
	end := p.cfg.Clock.Now()
	rec.fail = errors.New("nft failed")
	if _, err := p.Sync(ctx, svcs, eps); err == nil { // partial, failed
		t.Fatal("sync did not fail")
	}

	for name, want := range map[string]struct {
		count uint64
		sum   float64
	}{
		"kubeproxy_sync_proxy_rules_duration_seconds":         {3, 0.75},
		"kubeproxy_sync_full_proxy_rules_duration_seconds":    {1, 0.25},
		"kubeproxy_sync_partial_proxy_rules_duration_seconds": {2, 0.5},
	} {
		h := gathered(t, reg, name).GetHistogram()
		if h.GetSampleCount() != want.count || h.GetSampleSum() != want.sum {
			t.Errorf("%s: count %d sum %v, want %d and %v", name, h.GetSampleCount(), h.GetSampleSum(), want.count, want.sum)
		}
	}
	if v := gathered(t, reg, "kubeproxy_sync_proxy_rules_last_timestamp_seconds").GetGauge().GetValue(); v != float64(end.UnixNano())/1e9 {
		t.Errorf("last sync %v, want %v (the end of the last successful sync)", v, end)
	}
	if v := gathered(t, reg, "kubeproxy_sync_proxy_rules_nftables_sync_failures_total").GetCounter().GetValue(); v != 1 {
		t.Errorf("sync failures %v, want 1", v)
	}
}

// Change times of EndpointSlices are recorded once each, for slices the
// proxy handles and changes made after it started, and measured up to the
// end of the sync that applied them (after a failed one, the next).
func TestNetworkProgrammingLatency(t *testing.T) {
	p, rec, reg := newMetricsProxier(t)
	clk := p.cfg.Clock.(interface{ Step(time.Duration) })
	start := p.cfg.Clock.Now()
	at := func(d time.Duration) string { return start.Add(d).Format(time.RFC3339Nano) }
	annotated := func(s *discoveryv1.EndpointSlice, trigger string) *discoveryv1.EndpointSlice {
		s = s.DeepCopy()
		s.Annotations = map[string]string{v1.EndpointsLastChangeTriggerTime: trigger}
		return s
	}
	web := slice("ns", "web", "web-1", "http", 8080, ep("10.244.1.2"))
	headless := annotated(web, at(time.Second))
	headless.Labels[v1.IsHeadlessService] = ""
	other := annotated(web, at(time.Second))
	other.Labels[LabelServiceProxyName] = "other"
	v6 := annotated(web, at(time.Second))
	v6.AddressType = discoveryv1.AddressTypeIPv6

	for _, c := range []struct{ old, cur *discoveryv1.EndpointSlice }{
		{nil, annotated(web, at(-time.Second))},                              // before the start: no
		{nil, annotated(web, at(time.Second))},                               // yes
		{annotated(web, at(time.Second)), annotated(web, at(time.Second))},   // same trigger: no
		{annotated(web, at(time.Second)), annotated(web, at(2*time.Second))}, // yes
		{nil, web}, // no annotation
		{nil, annotated(web, "garbage")},
		{nil, headless}, {nil, other}, {nil, v6},
	} {
		var old any
		if c.old != nil {
			old = c.old
		}
		p.recordTrigger(old, c.cur)
	}
	clk.Step(5 * time.Second)
	svcs := []*v1.Service{service("ns", "web", "10.96.0.10", []v1.ServicePort{tcpPort("http", 80)})}
	sl := []*discoveryv1.EndpointSlice{web}

	rec.fail = errors.New("nft failed")
	if _, err := p.syncObjects(context.Background(), svcs, sl, p.triggers.take()); err == nil {
		t.Fatal("sync did not fail")
	}
	clk.Step(time.Second)
	if _, err := p.syncObjects(context.Background(), svcs, sl, p.triggers.take()); err != nil {
		t.Fatalf("Sync: %v", err)
	}
	h := gathered(t, reg, "kubeproxy_network_programming_duration_seconds").GetHistogram()
	if h.GetSampleCount() != 2 || h.GetSampleSum() != 5+4 {
		t.Errorf("network programming: count %d sum %v, want 2 and 9 (6 s after the start, changes at 1 and 2 s)",
			h.GetSampleCount(), h.GetSampleSum())
	}
	if left := p.triggers.take(); len(left) != 0 {
		t.Errorf("triggers left: %v", left)
	}
}
