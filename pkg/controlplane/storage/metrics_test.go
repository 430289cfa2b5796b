package storage

import (
	"context"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/component-base/metrics"

	"github.com/nodeagent/nodeagent/pkg/controlplane/internal/metricstest"
)

func TestEtcdRequestMetrics(t *testing.T) {
	reg := metrics.NewKubeRegistry()
	m := NewMetrics()
	m.Register(reg)
	s := newStore(t, func(c *Config) { c.Metrics = m })
	ctx := context.Background()

	mustCreate(t, s, configMap("ns", "a", nil))
	if _, err := s.Get(ctx, "ns", "a"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Update(ctx, "ns", "a", func(o runtime.Object) (runtime.Object, error) {
		o.(*v1.ConfigMap).Data["k"] = "changed"
		return o, nil
	}, false); err != nil {
		t.Fatal(err)
	}
	if _, err := s.List(ctx, "ns", ListOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Delete(ctx, "ns", "a", nil, false); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, "ns", "a"); err == nil {
		t.Fatal("get after delete succeeded")
	}

	cm := map[string]string{"group": "", "resource": "configmaps"}
	got := metricstest.By(t, reg, "etcd_requests_total", "operation", cm)
	// get: Get, Update's and Delete's reads, the Get of the deleted key;
	// list: the cache's first list and List.
	want := map[string]float64{"create": 1, "get": 4, "update": 1, "delete": 1, "list": 2}
	for op, n := range want {
		if got[op] != n {
			t.Errorf("etcd_requests_total{operation=%q} = %v, want %v (all: %v)", op, got[op], n, got)
		}
	}
	if n := metricstest.By(t, reg, "etcd_request_duration_seconds", "operation", cm)["create"]; n != 1 {
		t.Errorf("etcd_request_duration_seconds{operation=create} count = %v, want 1", n)
	}
}

func TestNilMetricsRecordNothing(t *testing.T) {
	var m *Metrics
	ops := newEtcdOps(m, v1.Resource("pods"))
	ops.get.record(time.Now(), nil) // must not panic
}
