// Package metrics holds the agent's Prometheus registries and its
// metrics, defined with k8s.io/component-base/metrics under the upstream
// kubelet's names, types, labels, buckets and help texts, so that
// dashboards and alerts written for the kubelet work unchanged.
//
// A Metrics value owns two registries: the main one served on /metrics
// (kubelet_* metrics, plus the Go runtime and process collectors) and the
// prober one served on /metrics/probes (prober_probe_total,
// prober_probe_duration_seconds). Nothing is process-global: two agents in
// one process (tests, the all-in-one server) keep separate counts.
//
// Components report through narrow hooks and never import this package:
//
//	m := metrics.New(nodeName)
//	rt, _ := runtime.Dial(ctx, endpoint, timeout, runtime.WithCallObserver(m.RuntimeCall))
//	pleg.Relisted, pleg.Listed = m.PLEGRelisted, m.PLEGListed
//	podworker.Config{Metrics: m, ProbeMetrics: m, ...}
//	proxyMetrics.Register(m) // other components' collectors join /metrics
//	mux.Handle("/metrics", m.Handler())
//	mux.Handle("/metrics/probes", m.ProbesHandler())
//
// /metrics/resource and /stats/summary are served by package stats.
package metrics
