package metrics

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	k8smetrics "k8s.io/component-base/metrics"
	criv1 "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// scrape fetches h and parses it with the Prometheus text parser.
func scrape(t *testing.T, h http.Handler) map[string]*dto.MetricFamily {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("scrape: %d %s", rec.Code, rec.Body)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(strings.NewReader(rec.Body.String()))
	if err != nil {
		t.Fatalf("parse: %v\n%s", err, rec.Body)
	}
	return families
}

// fakeClock is a settable now.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time       { return c.t }
func (c *fakeClock) step(d time.Duration) { c.t = c.t.Add(d) }
func newTestMetrics() (*Metrics, *fakeClock) {
	c := &fakeClock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	m := New("node1")
	m.now = c.now
	return m, c
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// series finds the sample of family name whose labels include want.
func series(t *testing.T, fams map[string]*dto.MetricFamily, name string, want map[string]string) *dto.Metric {
	t.Helper()
	f := fams[name]
	if f == nil {
		t.Fatalf("no family %s", name)
	}
next:
	for _, m := range f.GetMetric() {
		for k, v := range want {
			if label(m, k) != v {
				continue next
			}
		}
		return m
	}
	t.Fatalf("%s: no series with %v", name, want)
	return nil
}

func TestMetricsEndpointHasUpstreamNames(t *testing.T) {
	m, _ := newTestMetrics()
	m.RuntimeCall("/runtime.v1.RuntimeService/ListContainers", 10*time.Millisecond, nil)
	m.PLEGRelisted(time.Millisecond, nil)
	m.PLEGListed(nil, nil)
	m.PodWorkerDuration("create", time.Second)
	m.PodStarted(&v1.Pod{}, time.Now(), time.Now())
	m.ImagePullFinished("uid", time.Second, 0)
	m.RuntimeCall("/runtime.v1.RuntimeService/StartContainer", 0, errors.New("boom"))
	m.PodPreempted("pods")

	fams := scrape(t, m.Handler())
	want := map[string]dto.MetricType{
		"kubelet_node_name":                           dto.MetricType_GAUGE,
		"kubelet_running_pods":                        dto.MetricType_GAUGE,
		"kubelet_running_containers":                  dto.MetricType_GAUGE,
		"kubelet_pod_start_duration_seconds":          dto.MetricType_HISTOGRAM,
		"kubelet_pod_start_sli_duration_seconds":      dto.MetricType_HISTOGRAM,
		"kubelet_pod_start_total_duration_seconds":    dto.MetricType_HISTOGRAM,
		"kubelet_pod_worker_duration_seconds":         dto.MetricType_HISTOGRAM,
		"kubelet_runtime_operations_total":            dto.MetricType_COUNTER,
		"kubelet_runtime_operations_duration_seconds": dto.MetricType_HISTOGRAM,
		"kubelet_runtime_operations_errors_total":     dto.MetricType_COUNTER,
		"kubelet_pleg_relist_duration_seconds":        dto.MetricType_HISTOGRAM,
		"kubelet_pleg_relist_interval_seconds":        dto.MetricType_HISTOGRAM,
		"kubelet_pleg_last_seen_seconds":              dto.MetricType_GAUGE,
		"kubelet_image_pull_duration_seconds":         dto.MetricType_HISTOGRAM,
		"kubelet_preemptions":                         dto.MetricType_COUNTER,
		"go_goroutines":                               dto.MetricType_GAUGE,
		"process_cpu_seconds_total":                   dto.MetricType_COUNTER,
	}
	for name, typ := range want {
		f := fams[name]
		if f == nil {
			t.Errorf("missing %s", name)
			continue
		}
		if f.GetType() != typ {
			t.Errorf("%s: type %v, want %v", name, f.GetType(), typ)
		}
	}
	if h := fams["kubelet_running_pods"].GetHelp(); h != "[ALPHA] Number of pods that have a running pod sandbox" {
		t.Errorf("help: %q", h)
	}
	if v := series(t, fams, "kubelet_node_name", map[string]string{"node": "node1"}).GetGauge().GetValue(); v != 1 {
		t.Errorf("node name gauge: %v", v)
	}
	if n := len(series(t, fams, "kubelet_pod_start_duration_seconds", nil).GetHistogram().GetBucket()); n != 26 {
		t.Errorf("pod start buckets: %d, want upstream's 25 and +Inf", n)
	}
	if v := series(t, fams, "kubelet_runtime_operations_errors_total", map[string]string{"operation_type": "start_container"}).GetCounter().GetValue(); v != 1 {
		t.Errorf("start_container errors: %v", v)
	}
	if v := series(t, fams, "kubelet_preemptions", map[string]string{"preemption_signal": "pods"}).GetCounter().GetValue(); v != 1 {
		t.Errorf("preemptions: %v", v)
	}
}

func TestOperationType(t *testing.T) {
	for method, want := range map[string]string{
		"/runtime.v1.RuntimeService/RunPodSandbox":            "run_podsandbox",
		"/runtime.v1.RuntimeService/ListPodSandbox":           "list_podsandbox",
		"/runtime.v1.RuntimeService/ContainerStatus":          "container_status",
		"/runtime.v1.RuntimeService/UpdateContainerResources": "update_container",
		"/runtime.v1.ImageService/PullImage":                  "pull_image",
		"/runtime.v1.ImageService/ImageFsInfo":                "image_fs_info",
		"/runtime.v1.RuntimeService/StreamPodSandboxMetrics":  "stream_podsandbox_metrics",
	} {
		if got := operationType(method); got != want {
			t.Errorf("%s: %q, want %q", method, got, want)
		}
	}
}

func TestPodStartHistogramsCountStartedPods(t *testing.T) {
	m, clock := newTestMetrics()
	created := clock.now()
	pod := func(uid string) *v1.Pod {
		return &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid), CreationTimestamp: metav1.NewTime(created)}}
	}
	clock.step(time.Second)
	seen := clock.now()
	m.ImagePullStarted("a")
	clock.step(20 * time.Second)
	m.ImagePullFinished("a", 20*time.Second, 50<<20)
	clock.step(2 * time.Second)
	m.PodStarted(pod("a"), seen, clock.now()) // 23 s total, 3 s without the pull
	m.PodStarted(pod("b"), seen, clock.now())

	fams := scrape(t, m.Handler())
	start := series(t, fams, "kubelet_pod_start_duration_seconds", nil).GetHistogram()
	if start.GetSampleCount() != 2 || start.GetSampleSum() != 44 {
		t.Errorf("pod start: count %d sum %v, want 2 and 44", start.GetSampleCount(), start.GetSampleSum())
	}
	sli := series(t, fams, "kubelet_pod_start_sli_duration_seconds", nil).GetHistogram()
	if sli.GetSampleCount() != 2 || sli.GetSampleSum() != 3+23 {
		t.Errorf("SLI: count %d sum %v, want 2 and 26", sli.GetSampleCount(), sli.GetSampleSum())
	}
	pull := series(t, fams, "kubelet_image_pull_duration_seconds", map[string]string{"image_size_in_bytes": "10MB-100MB"})
	if pull.GetHistogram().GetSampleCount() != 1 {
		t.Errorf("image pulls: %v", pull)
	}
	if len(m.pulls) != 0 {
		t.Errorf("pull windows kept after start: %v", m.pulls)
	}
}

func TestPLEGMetrics(t *testing.T) {
	m, clock := newTestMetrics()
	m.PLEGRelisted(100*time.Millisecond, nil)
	clock.step(time.Second)
	m.PLEGRelisted(100*time.Millisecond, errors.New("down")) // failed: not a new start
	clock.step(time.Second)
	m.PLEGRelisted(100*time.Millisecond, nil)
	m.PLEGListed([]*criv1.PodSandbox{
		{Id: "s1", State: criv1.PodSandboxState_SANDBOX_READY, Metadata: &criv1.PodSandboxMetadata{Uid: "a"}},
		{Id: "s2", State: criv1.PodSandboxState_SANDBOX_NOTREADY, Metadata: &criv1.PodSandboxMetadata{Uid: "b"}},
	}, []*criv1.Container{
		{Id: "c1", State: criv1.ContainerState_CONTAINER_RUNNING},
		{Id: "c2", State: criv1.ContainerState_CONTAINER_RUNNING},
		{Id: "c3", State: criv1.ContainerState_CONTAINER_EXITED},
	})

	fams := scrape(t, m.Handler())
	interval := series(t, fams, "kubelet_pleg_relist_interval_seconds", nil).GetHistogram()
	if interval.GetSampleCount() != 2 || interval.GetSampleSum() != 3 {
		t.Errorf("interval: count %d sum %v, want 2 and 3 (1 s, then 2 s since the last success)", interval.GetSampleCount(), interval.GetSampleSum())
	}
	if n := series(t, fams, "kubelet_pleg_relist_duration_seconds", nil).GetHistogram().GetSampleCount(); n != 3 {
		t.Errorf("relists: %d", n)
	}
	if v := series(t, fams, "kubelet_running_pods", nil).GetGauge().GetValue(); v != 1 {
		t.Errorf("running pods: %v", v)
	}
	for state, want := range map[string]float64{"running": 2, "exited": 1, "created": 0, "unknown": 0} {
		if v := series(t, fams, "kubelet_running_containers", map[string]string{"container_state": state}).GetGauge().GetValue(); v != want {
			t.Errorf("%s containers: %v, want %v", state, v, want)
		}
	}
}

func TestProbeMetrics(t *testing.T) {
	m, _ := newTestMetrics()
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", UID: "uid-1"}}
	m.ProbeRun("Readiness", ProbeSuccessful, pod, "app", 20*time.Millisecond)
	m.ProbeRun("Readiness", ProbeFailed, pod, "app", time.Second)
	m.ProbeRun("Readiness", ProbeFailed, pod, "app", time.Second)

	fams := scrape(t, m.ProbesHandler())
	labels := map[string]string{"probe_type": "Readiness", "container": "app", "pod": "web", "namespace": "shop", "pod_uid": "uid-1"}
	labels["result"] = ProbeFailed
	if v := series(t, fams, "prober_probe_total", labels).GetCounter().GetValue(); v != 2 {
		t.Errorf("failed probes: %v", v)
	}
	if h := fams["prober_probe_total"].GetHelp(); !strings.HasPrefix(h, "[BETA] ") {
		t.Errorf("help: %q", h)
	}
	d := series(t, fams, "prober_probe_duration_seconds", map[string]string{"probe_type": "Readiness", "pod": "web"}).GetHistogram()
	if d.GetSampleCount() != 1 { // failures are not timed
		t.Errorf("durations: %d", d.GetSampleCount())
	}
	if fams["process_start_time_seconds"] == nil {
		t.Error("no process_start_time_seconds")
	}

	m.ProbeWorkerDone("Readiness", pod, "app")
	if fams := scrape(t, m.ProbesHandler()); fams["prober_probe_total"] != nil || fams["prober_probe_duration_seconds"] != nil {
		t.Errorf("series kept after the worker ended: %v", fams)
	}
}

func TestImageSizeBucket(t *testing.T) {
	for size, want := range map[uint64]string{
		0: "N/A", 1: "0-10MB", 10 << 20: "0-10MB", 10<<20 + 1: "10MB-100MB",
		700 << 20: "500MB-1GB", 15 << 30: "10GB-20GB", 200 << 30: "GT100GB",
	} {
		if got := imageSizeBucket(size); got != want {
			t.Errorf("%d: %q, want %q", size, got, want)
		}
	}
}

func TestInstancesAreIndependent(t *testing.T) {
	a, b := New("a"), New("b")
	a.PodWorkerDuration("sync", time.Second)
	if fams := scrape(t, b.Handler()); fams["kubelet_pod_worker_duration_seconds"] != nil {
		t.Error("a's observation shows in b")
	}
}

func TestRegisterAddsToMetricsEndpoint(t *testing.T) {
	m, _ := newTestMetrics()
	c := k8smetrics.NewCounter(&k8smetrics.CounterOpts{Subsystem: "kubeproxy", Name: "test_total", Help: "A test counter.",
		StabilityLevel: k8smetrics.ALPHA})
	if err := m.Register(c); err != nil {
		t.Fatalf("Register: %v", err)
	}
	c.Inc()
	if v := series(t, scrape(t, m.Handler()), "kubeproxy_test_total", nil).GetCounter().GetValue(); v != 1 {
		t.Errorf("registered counter: %v", v)
	}
	if err := m.Register(c); err == nil {
		t.Error("registering twice did not fail")
	}
}

// kubelet_cgroup_manager_duration_seconds: upstream's name, help,
// operation_type label and default buckets.
func TestCgroupManagerDuration(t *testing.T) {
	m, _ := newTestMetrics()
	m.CgroupManagerOperation("create", 3*time.Millisecond)
	m.CgroupManagerOperation("create", 2*time.Second)
	m.CgroupManagerOperation("destroy", time.Millisecond)
	fams := scrape(t, m.Handler())
	f := fams["kubelet_cgroup_manager_duration_seconds"]
	if f == nil || f.GetType() != dto.MetricType_HISTOGRAM {
		t.Fatalf("kubelet_cgroup_manager_duration_seconds: %v", f)
	}
	if h := f.GetHelp(); h != "[ALPHA] Duration in seconds for cgroup manager operations. Broken down by method." {
		t.Errorf("help: %q", h)
	}
	create := series(t, fams, "kubelet_cgroup_manager_duration_seconds", map[string]string{"operation_type": "create"}).GetHistogram()
	if create.GetSampleCount() != 2 || len(create.GetBucket()) != 12 {
		t.Errorf("create: %d samples in %d buckets, want 2 in the default 11 and +Inf", create.GetSampleCount(), len(create.GetBucket()))
	}
	if b := create.GetBucket()[0]; b.GetUpperBound() != 0.005 || b.GetCumulativeCount() != 1 {
		t.Errorf("first bucket %v/%d, want 0.005 holding the 3 ms create", b.GetUpperBound(), b.GetCumulativeCount())
	}
	if n := series(t, fams, "kubelet_cgroup_manager_duration_seconds", map[string]string{"operation_type": "destroy"}).GetHistogram().GetSampleCount(); n != 1 {
		t.Errorf("destroy samples %d", n)
	}
}
