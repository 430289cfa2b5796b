package apiserver

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"
	metricsclient "k8s.io/metrics/pkg/client/clientset/versioned"

	"github.com/nodeagent/nodeagent/pkg/controlplane/apiserver/kubeletproxy/kubelettest"
	"github.com/nodeagent/nodeagent/pkg/controlplane/pki"
)

// metricsHarness is a kubelet harness scraping every 100ms, whose node n1
// is Ready with a fake kubelet; n2 is Ready without an agent, n3 not Ready.
type metricsHarness struct {
	*kubeletHarness
	metrics *metricsclient.Clientset
	ns      string
}

func newMetricsHarness(t *testing.T) *metricsHarness {
	t.Helper()
	h := &metricsHarness{kubeletHarness: newKubeletHarnessWith(t, nil, func(c *Config) { c.MetricResolution = 100 * time.Millisecond })}
	h.metrics = metricsclient.NewForConfigOrDie(h.config)
	h.ns = h.namespace(t)
	h.kubelet.SetLoad(kubelettest.Load{MilliCores: 250, MemoryBytes: 512 << 20},
		kubelettest.ContainerLoad{Namespace: h.ns, Pod: "web", Container: "c", Load: kubelettest.Load{MilliCores: 120, MemoryBytes: 64 << 20}})
	h.addNode(t, "n2", "127.0.0.1", closedPort(t))
	h.addNode(t, "n3", h.kubelet.Host, h.kubelet.Port)
	h.setReady(t, "n1", map[string]string{"zone": "a"})
	h.setReady(t, "n2", nil)
	h.addPod(t, h.ns, "web", "n1", "c")
	h.addPod(t, h.ns, "idle", "n1", "c") // the kubelet reports nothing for it
	return h
}

// closedPort is a loopback port nothing listens on.
func closedPort(t *testing.T) int32 {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	_, port, _ := net.SplitHostPort(l.Addr().String())
	p, _ := strconv.Atoi(port)
	return int32(p)
}

func (h *metricsHarness) setReady(t *testing.T, name string, labels map[string]string) {
	t.Helper()
	node, err := h.client.CoreV1().Nodes().Get(ctxT(t), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if labels != nil {
		node.Labels = labels
		if node, err = h.client.CoreV1().Nodes().Update(ctxT(t), node, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	node.Status.Conditions = []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue, LastHeartbeatTime: metav1.Now()}}
	if _, err := h.client.CoreV1().Nodes().UpdateStatus(ctxT(t), node, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// waitNodeMetrics waits for n1's second scrape.
func (h *metricsHarness) waitNodeMetrics(t *testing.T) *metricsv1beta1.NodeMetrics {
	t.Helper()
	var m *metricsv1beta1.NodeMetrics
	err := wait.PollUntilContextTimeout(ctxT(t), 50*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		var err error
		m, err = h.metrics.MetricsV1beta1().NodeMetricses().Get(ctx, "n1", metav1.GetOptions{})
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("no metrics for n1: %v", err)
	}
	return m
}

func TestNodeMetricsAPI(t *testing.T) {
	h := newMetricsHarness(t)
	m := h.waitNodeMetrics(t)
	if cpu, mem := m.Usage.Cpu(), m.Usage.Memory(); cpu.String() != "250m" || mem.String() != "512Mi" {
		t.Errorf("n1 usage: cpu %s memory %s, want 250m and 512Mi", cpu, mem)
	}
	if m.Window.Duration <= 0 || time.Since(m.Timestamp.Time) > 5*time.Second || m.Labels["zone"] != "a" {
		t.Errorf("n1: window %s timestamp %s labels %v", m.Window.Duration, m.Timestamp, m.Labels)
	}

	list, err := h.metrics.MetricsV1beta1().NodeMetricses().List(ctxT(t), metav1.ListOptions{})
	if err != nil || len(list.Items) != 1 || list.Items[0].Name != "n1" {
		t.Fatalf("list: %v %+v, want n1 only (n2 has no agent, n3 is not Ready)", err, list)
	}
	for sel, want := range map[string]int{"zone=a": 1, "zone=b": 0} {
		l, err := h.metrics.MetricsV1beta1().NodeMetricses().List(ctxT(t), metav1.ListOptions{LabelSelector: sel})
		if err != nil || len(l.Items) != want {
			t.Errorf("list %s: %v, %d items, want %d", sel, err, len(l.Items), want)
		}
	}
	if l, err := h.metrics.MetricsV1beta1().NodeMetricses().List(ctxT(t), metav1.ListOptions{FieldSelector: "metadata.name=n2"}); err != nil || len(l.Items) != 0 {
		t.Errorf("list metadata.name=n2: %v %d items", err, len(l.Items))
	}

	_, err = h.metrics.MetricsV1beta1().NodeMetricses().Get(ctxT(t), "n2", metav1.GetOptions{})
	if se, ok := err.(apierrors.APIStatus); !apierrors.IsNotFound(err) || !ok || se.Status().Details.Group != "metrics.k8s.io" {
		t.Errorf("n2 without an agent: got %v, want nodes.metrics.k8s.io not found", err)
	}
	if _, err = h.metrics.MetricsV1beta1().NodeMetricses().Get(ctxT(t), "nope", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("missing node: %v", err)
	}
	req, ok := h.kubelet.Last("/metrics/resource")
	if !ok || req.ClientCN != pki.KubeletClientUser {
		t.Errorf("the kubelet's /metrics/resource request: %+v %v, want the API server's client certificate", req, ok)
	}
}

func TestPodMetricsAPI(t *testing.T) {
	h := newMetricsHarness(t)
	h.waitNodeMetrics(t)
	pods := h.metrics.MetricsV1beta1().PodMetricses(h.ns)
	pm, err := pods.Get(ctxT(t), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(pm.Containers) != 1 || pm.Containers[0].Name != "c" || pm.Containers[0].Usage.Cpu().String() != "120m" ||
		pm.Containers[0].Usage.Memory().String() != "64Mi" {
		t.Errorf("web: %+v", pm.Containers)
	}
	if pm.Namespace != h.ns || pm.Labels != nil || pm.Window.Duration <= 0 {
		t.Errorf("web: %+v", pm.ObjectMeta)
	}

	list, err := pods.List(ctxT(t), metav1.ListOptions{})
	if err != nil || len(list.Items) != 1 || list.Items[0].Name != "web" {
		t.Errorf("list: %v %+v, want web only (idle has no metrics)", err, list)
	}
	all, err := h.metrics.MetricsV1beta1().PodMetricses("").List(ctxT(t), metav1.ListOptions{FieldSelector: "metadata.namespace=" + h.ns})
	if err != nil || len(all.Items) != 1 {
		t.Errorf("list in all namespaces: %v %+v", err, all)
	}
	if _, err := pods.Get(ctxT(t), "idle", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("idle: got %v, want not found", err)
	}
	if _, err := pods.Get(ctxT(t), "nope", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("missing pod: %v", err)
	}
	if _, err := pods.Watch(ctxT(t), metav1.ListOptions{}); !apierrors.IsMethodNotSupported(err) {
		t.Errorf("watch: got %v, want 405", err)
	}
}

func TestResourceMetricsDiscoveryAndTable(t *testing.T) {
	h := newMetricsHarness(t)
	groups, err := h.client.Discovery().ServerGroups()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, g := range groups.Groups {
		found = found || (g.Name == "metrics.k8s.io" && g.PreferredVersion.Version == "v1beta1")
	}
	if !found {
		t.Errorf("metrics.k8s.io/v1beta1 not in /apis: %+v", groups)
	}
	rl, err := h.client.Discovery().ServerResourcesForGroupVersion("metrics.k8s.io/v1beta1")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"nodes": "NodeMetrics false [get list]", "pods": "PodMetrics true [get list]"}
	for _, r := range rl.APIResources {
		if got := r.Kind + " " + strconv.FormatBool(r.Namespaced) + " " + fmt.Sprint(r.Verbs); got != want[r.Name] {
			t.Errorf("%s: %s, want %s", r.Name, got, want[r.Name])
		}
	}

	h.waitNodeMetrics(t)
	req, _ := http.NewRequest("GET", h.url+"/apis/metrics.k8s.io/v1beta1/nodes", nil)
	req.Header.Set("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var table metav1.Table
	if err := json.NewDecoder(resp.Body).Decode(&table); err != nil {
		t.Fatal(err)
	}
	if len(table.ColumnDefinitions) != 4 || table.ColumnDefinitions[1].Name != "cpu" || len(table.Rows) != 1 || table.Rows[0].Cells[1] != "250m" {
		t.Errorf("table: %+v", table)
	}
}
