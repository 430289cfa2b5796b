package agent

import (
	"bytes"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"

	"k8s.io/client-go/rest"

	"github.com/nodeagent/nodeagent/pkg/agentconfig"
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

// Without the nft binary the service proxy is off and says so; the agent
// goes on (its pods run).
func TestServiceProxyOffWithoutNft(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	var logs bytes.Buffer
	o := Options{Flags: &agentconfig.Flags{ServiceProxy: true}}
	run, err := newServiceProxy(o, &rest.Config{Host: "http://127.0.0.1:1"}, metrics.New("node1"), slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil || run != nil {
		t.Fatalf("newServiceProxy without nft = %p, %v; want no proxy and no error", run, err)
	}
	if !strings.Contains(logs.String(), "level=ERROR") || !strings.Contains(logs.String(), "nft") {
		t.Errorf("log lacks the error:\n%s", logs.String())
	}
}
