package agent

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/nodeagent/nodeagent/pkg/metrics"
	"github.com/nodeagent/nodeagent/pkg/proxy"
)

// The service proxy's metrics, registered as newServiceProxy does, are
// on the agent's /metrics from the start.
func TestServiceProxyMetricsOnAgentMetrics(t *testing.T) {
	m := metrics.New("node1")
	if err := proxy.NewMetrics().Register(m); err != nil {
		t.Fatalf("Register: %v", err)
	}
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body := rec.Body.String()
	for _, want := range []string{
		`kubeproxy_sync_proxy_rules_duration_seconds_count{ip_family="IPv4"} 0`,
		`kubeproxy_sync_full_proxy_rules_duration_seconds_count{ip_family="IPv4"} 0`,
		`kubeproxy_sync_partial_proxy_rules_duration_seconds_count{ip_family="IPv4"} 0`,
		`kubeproxy_sync_proxy_rules_last_timestamp_seconds{ip_family="IPv4"} 0`,
		`kubeproxy_sync_proxy_rules_nftables_sync_failures_total{ip_family="IPv4"} 0`,
		`kubeproxy_sync_proxy_rules_nftables_cleanup_failures_total{ip_family="IPv4"} 0`,
		`kubeproxy_network_programming_duration_seconds_count{ip_family="IPv4"} 0`,
		"kubelet_node_name", // still the kubelet's metrics too
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}
