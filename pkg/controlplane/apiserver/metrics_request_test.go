package apiserver

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeagent/nodeagent/pkg/controlplane/apiserver/request"
	"github.com/nodeagent/nodeagent/pkg/controlplane/internal/metricstest"
)

// requestCount reads apiserver_request_total of the shared server.
func requestCount(t *testing.T, labels map[string]string) float64 {
	t.Helper()
	return metricstest.Sum(t, testSrv.cfg.Metrics, "apiserver_request_total", labels)
}

func TestRequestMetricsCount(t *testing.T) {
	ns := testNamespace(t)
	created := map[string]string{"verb": "POST", "resource": "pods", "scope": "resource", "code": "201", "component": "apiserver"}
	missing := map[string]string{"verb": "GET", "resource": "pods", "scope": "resource", "code": "404"}
	listed := map[string]string{"verb": "LIST", "resource": "pods", "scope": "namespace", "code": "200"}
	refused := map[string]string{"verb": "LIST", "resource": "secrets", "scope": "cluster", "code": "403"}
	before := map[string]float64{}
	for name, l := range map[string]map[string]string{"created": created, "missing": missing, "listed": listed, "refused": refused} {
		before[name] = requestCount(t, l)
	}
	durations := metricstest.Sum(t, testSrv.cfg.Metrics, "apiserver_request_duration_seconds", map[string]string{"verb": "POST", "resource": "pods"})
	etcdCreates := metricstest.Sum(t, testSrv.cfg.Metrics, "etcd_request_duration_seconds", map[string]string{"operation": "create", "resource": "pods"})

	if _, err := client.CoreV1().Pods(ns).Create(ctxT(t), testPod("p"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoreV1().Pods(ns).Get(ctxT(t), "nope", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("get missing pod: %v", err)
	}
	if _, err := client.CoreV1().Pods(ns).List(ctxT(t), metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	if code := asUser(t, request.User{Name: "alice", Groups: []string{"system:authenticated"}}, "GET", "/api/v1/secrets"); code != http.StatusForbidden {
		t.Fatalf("alice listing secrets: %d", code)
	}

	for name, l := range map[string]map[string]string{"created": created, "missing": missing, "listed": listed, "refused": refused} {
		if got := requestCount(t, l) - before[name]; got != 1 {
			t.Errorf("%s %v: apiserver_request_total moved by %v, want 1", name, l, got)
		}
	}
	if got := metricstest.Sum(t, testSrv.cfg.Metrics, "apiserver_request_duration_seconds", map[string]string{"verb": "POST", "resource": "pods"}); got != durations+1 {
		t.Errorf("apiserver_request_duration_seconds{POST pods} count %v, want %v", got, durations+1)
	}
	if got := metricstest.Sum(t, testSrv.cfg.Metrics, "etcd_request_duration_seconds", map[string]string{"operation": "create", "resource": "pods"}); got != etcdCreates+1 {
		t.Errorf("etcd_request_duration_seconds{create pods} count %v, want %v", got, etcdCreates+1)
	}
}

func TestMetricsEndpoint(t *testing.T) {
	if _, err := client.CoreV1().Namespaces().Get(ctxT(t), "default", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	testSrv.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body := rec.Body.String()
	if rec.Code != http.StatusOK {
		t.Fatalf("GET /metrics: %d %s", rec.Code, body)
	}
	for _, want := range []string{
		`apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="namespaces",scope="resource",subresource="",verb="GET",version="v1"}`,
		"# TYPE apiserver_request_duration_seconds histogram",
		`apiserver_request_duration_seconds_bucket{component="apiserver",dry_run="",group="",resource="namespaces",scope="resource",subresource="",verb="GET",version="v1",le="0.005"}`,
		"# TYPE etcd_request_duration_seconds histogram",
		`etcd_requests_total{group="",operation="get",resource="namespaces"}`,
		"go_goroutines ",
		"process_start_time_seconds ",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

func TestMetricsEndpointAuthorization(t *testing.T) {
	h := newKubeletHarnessWith(t, nil, nil) // a server of its own: this test resets its metrics
	for _, tc := range []struct {
		user   request.User
		method string
		code   int
	}{
		{request.User{Name: "admin", Groups: []string{mastersGroup}}, "GET", http.StatusOK},
		{request.User{Name: "prometheus", Groups: []string{monitoringGroup}}, "GET", http.StatusOK},
		{request.User{Name: "prometheus", Groups: []string{monitoringGroup}}, "DELETE", http.StatusForbidden},
		{request.User{Name: "alice", Groups: []string{"system:authenticated"}}, "GET", http.StatusForbidden},
		{request.User{Name: "system:node:n1", Groups: []string{nodesGroup}}, "GET", http.StatusForbidden},
		{request.User{Name: "admin", Groups: []string{mastersGroup}}, "DELETE", http.StatusOK},
	} {
		req := httptest.NewRequest(tc.method, "/metrics", nil)
		req = req.WithContext(request.WithUser(req.Context(), tc.user))
		rec := httptest.NewRecorder()
		h.api.Handler().ServeHTTP(rec, req)
		if rec.Code != tc.code {
			t.Errorf("%s %s /metrics: %d %s, want %d", tc.user.Name, tc.method, rec.Code, rec.Body, tc.code)
		}
		if tc.user.Name == "alice" && !strings.Contains(rec.Body.String(), `User \"alice\" cannot get path \"/metrics\"`) {
			t.Errorf("alice's refusal: %s", rec.Body)
		}
	}
	// The admin's DELETE reset the counters.
	if n := metricstest.Sum(t, h.api.cfg.Metrics, "apiserver_request_total", nil); n != 0 {
		t.Errorf("after reset apiserver_request_total sums to %v, want 0", n)
	}
}
