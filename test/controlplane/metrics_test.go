package controlplane_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"

	"github.com/nodeagent/nodeagent/pkg/controlplane/apiserver/kubeletproxy/kubelettest"
	"github.com/nodeagent/nodeagent/test/framework"
)

// topTimeout bounds the wait for a node's second scrape (the shared
// server scrapes every second).
const topTimeout = 20 * time.Second

// markReady labels the fake node, gives it 2 CPUs and 4Gi and reports it
// Ready, so that the API server scrapes its kubelet.
func (n *fakeNode) markReady(t *testing.T, labels map[string]string) {
	t.Helper()
	ctx := context.Background()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		node, err := n.cs.CoreV1().Nodes().Get(ctx, n.name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if node.Labels == nil {
			node.Labels = map[string]string{}
		}
		for k, v := range labels {
			node.Labels[k] = v
		}
		if node, err = n.cs.CoreV1().Nodes().Update(ctx, node, metav1.UpdateOptions{}); err != nil {
			return err
		}
		capacity := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("4Gi")}
		node.Status.Capacity, node.Status.Allocatable = capacity, capacity
		node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue,
			Reason: "KubeletReady", LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}}
		_, err = n.cs.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// eventually runs kubectl until it succeeds (metrics need two scrapes).
func eventually(t *testing.T, args ...string) string {
	t.Helper()
	deadline := time.Now().Add(topTimeout)
	for {
		out, stderr, err := kubectl(t, args...)
		if err == nil {
			return out
		}
		if time.Now().After(deadline) {
			t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, stderr)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// rowFor finds the table row whose cells start with prefix.
func rowFor(t *testing.T, out string, prefix ...string) []string {
	t.Helper()
	for _, r := range rows(out) {
		if len(r) >= len(prefix) && strings.Join(r[:len(prefix)], "\x00") == strings.Join(prefix, "\x00") {
			return r
		}
	}
	t.Fatalf("no row %q in:\n%s", prefix, out)
	return nil
}

func TestKubectlTop(t *testing.T) {
	n := newFakeNode(t, nil)
	ns := namespace(t)
	n.pod(t, ns, "web", true, "c")
	n.pod(t, ns, "two", true, "a", "b")
	n.kubelet.SetLoad(kubelettest.Load{MilliCores: 500, MemoryBytes: 1 << 30},
		kubelettest.ContainerLoad{Namespace: ns, Pod: "web", Container: "c", Load: kubelettest.Load{MilliCores: 100, MemoryBytes: 64 << 20}},
		kubelettest.ContainerLoad{Namespace: ns, Pod: "two", Container: "a", Load: kubelettest.Load{MilliCores: 20, MemoryBytes: 16 << 20}},
		kubelettest.ContainerLoad{Namespace: ns, Pod: "two", Container: "b", Load: kubelettest.Load{MilliCores: 30, MemoryBytes: 32 << 20}})
	n.markReady(t, map[string]string{"top-test": n.name})

	out := eventually(t, "top", "node", n.name)
	checkRow(t, "top node header", rows(out)[0], []string{"NAME", "CPU(cores)", "CPU(%)", "MEMORY(bytes)", "MEMORY(%)"})
	checkRow(t, "top node", rowFor(t, out, n.name), []string{n.name, "500m", "25%", "1024Mi", "25%"})
	out = mustKubectl(t, "top", "node", "-l", "top-test="+n.name)
	if r := rows(out); len(r) != 2 {
		t.Errorf("top node -l: want the header and one node:\n%s", out)
	}

	out = eventually(t, "top", "pod", "-n", ns)
	checkRow(t, "top pod header", rows(out)[0], []string{"NAME", "CPU(cores)", "MEMORY(bytes)"})
	checkRow(t, "top pod web", rowFor(t, out, "web"), []string{"web", "100m", "64Mi"})
	checkRow(t, "top pod two", rowFor(t, out, "two"), []string{"two", "50m", "48Mi"})
	out = mustKubectl(t, "top", "pod", "two", "-n", ns, "--containers")
	checkRow(t, "top pod two --containers b", rowFor(t, out, "two", "b"), []string{"two", "b", "30m", "32Mi"})
	out = mustKubectl(t, "top", "pod", "-A", "--field-selector", "metadata.namespace="+ns)
	checkRow(t, "top pod -A", rowFor(t, out, ns, "web"), []string{ns, "web", "100m", "64Mi"})

	// kubectl get prints metrics-server's table.
	out = mustKubectl(t, "get", "podmetrics", "-n", ns, "web")
	checkRow(t, "get podmetrics header", rows(out)[0], []string{"NAME", "CPU", "MEMORY", "WINDOW"})
	checkRow(t, "get podmetrics web", rowFor(t, out, "web"), []string{"web", "100m", "64Mi", "*"})

	raw := mustKubectl(t, "get", "--raw", "/apis/metrics.k8s.io/v1beta1/nodes/"+n.name)
	var nm metricsv1beta1.NodeMetrics
	if err := json.Unmarshal([]byte(raw), &nm); err != nil {
		t.Fatal(err)
	}
	if nm.Kind != "NodeMetrics" || nm.APIVersion != "metrics.k8s.io/v1beta1" || nm.Window.Duration <= 0 ||
		time.Since(nm.Timestamp.Time) > 10*time.Second || nm.Labels["top-test"] != n.name {
		t.Errorf("NodeMetrics: %s", raw)
	}
}

// scrapeMetrics reads the API server's /metrics through kubectl and
// parses it as Prometheus does.
func scrapeMetrics(t *testing.T) map[string]*dto.MetricFamily {
	t.Helper()
	families, err := framework.ParseMetrics(mustKubectl(t, "get", "--raw", "/metrics"))
	if err != nil {
		t.Fatal(err)
	}
	return families
}

// sampleSum is framework.SampleSum.
func sampleSum(families map[string]*dto.MetricFamily, name string, match map[string]string) float64 {
	return framework.SampleSum(families, name, match)
}

func TestKubectlRawMetrics(t *testing.T) {
	podCreates := map[string]string{"verb": "POST", "resource": "pods", "scope": "resource", "code": "201", "component": "apiserver"}
	etcdCreates := map[string]string{"operation": "create", "group": "", "resource": "pods"}
	unschedulable := map[string]string{"result": "unschedulable", "profile": "default-scheduler"}
	// The namespace's creation comes first: a server that has served no
	// request yet has no samples of the request metrics to export.
	ns := namespace(t)
	before := scrapeMetrics(t)
	for _, name := range []string{"apiserver_request_total", "apiserver_request_duration_seconds", "etcd_request_duration_seconds",
		"go_goroutines", "process_cpu_seconds_total"} {
		if before[name] == nil {
			t.Errorf("/metrics lacks %s", name)
		}
	}
	if f := before["apiserver_request_duration_seconds"]; f.GetType() != dto.MetricType_HISTOGRAM {
		t.Errorf("apiserver_request_duration_seconds is a %s", f.GetType())
	}

	// A pod no node can take: its creation is counted, the scheduler
	// tries and finds it unschedulable.
	mustKubectl(t, "-n", ns, "run", "pending", "--image=busybox:1", "--restart=Never")
	deadline := time.Now().Add(30 * time.Second)
	after := scrapeMetrics(t)
	for sampleSum(after, "scheduler_schedule_attempts_total", unschedulable) <= sampleSum(before, "scheduler_schedule_attempts_total", unschedulable) {
		if time.Now().After(deadline) {
			t.Fatal("scheduler_schedule_attempts_total{result=unschedulable} did not move")
		}
		time.Sleep(200 * time.Millisecond)
		after = scrapeMetrics(t)
	}
	for _, c := range []struct {
		name  string
		match map[string]string
	}{
		{"apiserver_request_total", podCreates},
		{"apiserver_request_duration_seconds", map[string]string{"verb": "POST", "resource": "pods"}},
		{"etcd_request_duration_seconds", etcdCreates},
		{"scheduler_schedule_attempts_total", unschedulable},
		{"scheduler_scheduling_attempt_duration_seconds", unschedulable},
	} {
		if b, a := sampleSum(before, c.name, c.match), sampleSum(after, c.name, c.match); a <= b {
			t.Errorf("%s%v: %v before, %v after the pod's creation", c.name, c.match, b, a)
		}
	}
}
