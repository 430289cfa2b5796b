package resourcemetrics

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// kubeletText is /metrics/resource as the kubelet serves it, with HELP
// lines, a pod-level family metrics-server ignores, and a container
// without memory (dropped as incomplete).
const kubeletText = `# HELP container_cpu_usage_seconds_total [STABLE] Cumulative cpu time consumed by the container in core-seconds
# TYPE container_cpu_usage_seconds_total counter
container_cpu_usage_seconds_total{container="app",namespace="ns",pod="web"} 1.5 1700000000123
container_cpu_usage_seconds_total{container="half",namespace="ns",pod="web"} 2 1700000000123
container_cpu_usage_seconds_total{container="side",namespace="ns",pod="web"} 0.25 1700000000100
# HELP container_memory_working_set_bytes [STABLE] Current working set of the container in bytes
# TYPE container_memory_working_set_bytes gauge
container_memory_working_set_bytes{container="app",namespace="ns",pod="web"} 1.048576e+07 1700000000123
container_memory_working_set_bytes{container="side",namespace="ns",pod="web"} 4096 1700000000100
# HELP container_start_time_seconds [STABLE] Start time of the container since unix epoch in seconds
# TYPE container_start_time_seconds gauge
container_start_time_seconds{container="app",namespace="ns",pod="web"} 1.6999999e+09
# HELP node_cpu_usage_seconds_total [STABLE] Cumulative cpu time consumed by the node in core-seconds
# TYPE node_cpu_usage_seconds_total counter
node_cpu_usage_seconds_total 100.000000001 1700000000000
# HELP node_memory_working_set_bytes [STABLE] Current working set of the node in bytes
# TYPE node_memory_working_set_bytes gauge
node_memory_working_set_bytes 2.147483648e+09 1700000000050
# HELP pod_cpu_usage_seconds_total [STABLE] Cumulative cpu time consumed by the pod in core-seconds
# TYPE pod_cpu_usage_seconds_total counter
pod_cpu_usage_seconds_total{namespace="ns",pod="web"} 1.75 1700000000123
# HELP resource_scrape_error [STABLE] 1 if there was an error while getting container metrics, 0 otherwise
# TYPE resource_scrape_error gauge
resource_scrape_error 0
`

func TestDecode(t *testing.T) {
	scraped := time.UnixMilli(1700000001000)
	b, err := Decode(strings.NewReader(kubeletText), "n1", scraped)
	if err != nil {
		t.Fatal(err)
	}
	node := b.Nodes["n1"]
	if node.CPU != 100_000_000_001 || node.Memory != 2<<30 || !node.Timestamp.Equal(time.UnixMilli(1700000000000)) {
		t.Errorf("node point: %+v", node)
	}
	pod, ok := b.Pods[types.NamespacedName{Namespace: "ns", Name: "web"}]
	if !ok || len(pod.Containers) != 2 {
		t.Fatalf("pod points: %+v (want app and side; half has no memory)", b.Pods)
	}
	app := pod.Containers["app"]
	if app.CPU != 1_500_000_000 || app.Memory != 10<<20 || !app.Timestamp.Equal(time.UnixMilli(1700000000123)) ||
		!app.StartTime.Equal(time.Unix(1699999900, 0)) {
		t.Errorf("app point: %+v", app)
	}
	if side := pod.Containers["side"]; side.CPU != 250_000_000 || !side.StartTime.IsZero() {
		t.Errorf("side point: %+v", side)
	}
}

func TestDecodeStampsSamplesWithoutTimestamp(t *testing.T) {
	scraped := time.UnixMilli(1700000001000)
	b, err := Decode(strings.NewReader("node_cpu_usage_seconds_total 1\nnode_memory_working_set_bytes 2\n"), "n1", scraped)
	if err != nil {
		t.Fatal(err)
	}
	if p := b.Nodes["n1"]; !p.Timestamp.Equal(scraped) || p.CPU != 1e9 || p.Memory != 2 {
		t.Errorf("node point: %+v", p)
	}
}

func TestDecodeIncompleteNode(t *testing.T) {
	b, err := Decode(strings.NewReader("node_cpu_usage_seconds_total 1 1700000000000\n"), "n1", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := b.Nodes["n1"]; ok {
		t.Errorf("a node without memory has a point: %+v", b.Nodes)
	}
}

func TestDecodeMalformed(t *testing.T) {
	if _, err := Decode(strings.NewReader("node_cpu_usage_seconds_total{ 1\n"), "n1", time.Now()); err == nil ||
		!strings.Contains(err.Error(), "node n1") {
		t.Errorf("got %v, want a parse error naming the node", err)
	}
}
