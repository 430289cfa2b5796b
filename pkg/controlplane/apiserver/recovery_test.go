package apiserver

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeagent/nodeagent/pkg/controlplane/apiserver/request"
	"github.com/nodeagent/nodeagent/pkg/controlplane/internal/metricstest"
	"github.com/nodeagent/nodeagent/pkg/crash"
)

// panicHeader makes the shared server's ServeHook panic: with
// http.ErrAbortHandler for "abort", with the header's value otherwise.
const panicHeader = "X-Test-Panic"

func panicOnHeader(r *http.Request) {
	switch v := r.Header.Get(panicHeader); v {
	case "":
	case "abort":
		panic(http.ErrAbortHandler)
	default:
		panic(v)
	}
}

func TestHandlerPanicIs500AndCounted(t *testing.T) {
	ns := testNamespace(t)
	labels := map[string]string{"verb": "LIST", "resource": "pods", "scope": "namespace", "code": "500"}
	before := requestCount(t, labels)
	panicsBefore := metricstest.Sum(t, testSrv.cfg.Metrics, "nodeagent_recovered_panics_total", map[string]string{"component": "apiserver", "kind": "http"})

	req := httptest.NewRequest(http.MethodGet, "/api/v1/namespaces/"+ns+"/pods", nil)
	req.Header.Set(panicHeader, "injected")
	req = req.WithContext(request.WithUser(req.Context(), request.User{Name: "admin", Groups: []string{"system:masters"}}))
	rec := httptest.NewRecorder()
	testSrv.Handler().ServeHTTP(rec, req)

	if rec.Code != http.StatusInternalServerError || strings.TrimSpace(rec.Body.String()) != crash.PanicMessage {
		t.Errorf("got %d %q, want 500 %q", rec.Code, rec.Body.String(), crash.PanicMessage)
	}
	if got := requestCount(t, labels) - before; got != 1 {
		t.Errorf("apiserver_request_total%v moved by %v, want 1", labels, got)
	}
	if got := metricstest.Sum(t, testSrv.cfg.Metrics, "nodeagent_recovered_panics_total", map[string]string{"component": "apiserver", "kind": "http"}) - panicsBefore; got != 1 {
		t.Errorf("nodeagent_recovered_panics_total moved by %v, want 1", got)
	}
	if _, err := client.CoreV1().Pods(ns).List(ctxT(t), metav1.ListOptions{}); err != nil {
		t.Errorf("list after the panic: %v", err)
	}
}

func TestHandlerAbortIsPassedOnAndCounted(t *testing.T) {
	labels := map[string]string{"verb": "GET", "resource": "namespaces", "scope": "resource"}
	before := metricstest.Sum(t, testSrv.cfg.Metrics, "apiserver_request_aborts_total", labels)
	req := httptest.NewRequest(http.MethodGet, "/api/v1/namespaces/default", nil)
	req.Header.Set(panicHeader, "abort")
	req = req.WithContext(request.WithUser(req.Context(), request.User{Name: "admin", Groups: []string{"system:masters"}}))
	func() {
		defer func() {
			if v := recover(); v != http.ErrAbortHandler {
				t.Errorf("recovered %v, want http.ErrAbortHandler passed on to net/http", v)
			}
		}()
		testSrv.Handler().ServeHTTP(httptest.NewRecorder(), req)
	}()
	if got := metricstest.Sum(t, testSrv.cfg.Metrics, "apiserver_request_aborts_total", labels) - before; got != 1 {
		t.Errorf("apiserver_request_aborts_total moved by %v, want 1", got)
	}
}
