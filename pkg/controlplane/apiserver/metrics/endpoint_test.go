package metrics

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/nodeagent/nodeagent/pkg/controlplane/internal/metricstest"
)

func TestEndpoint(t *testing.T) {
	reg := NewRegistry()
	requests := NewRequests()
	requests.Register(reg)
	requests.Observe(Labels{Verb: "GET", Resource: "pods", Component: "apiserver"}, http.StatusOK, 0)
	refuse := false
	e := NewEndpoint(reg, func(*http.Request) error {
		if refuse {
			return apierrors.NewForbidden(schema.GroupResource{}, "", errors.New("no"))
		}
		return nil
	})
	serve := func(method, path string) (*httptest.ResponseRecorder, bool) {
		rec := httptest.NewRecorder()
		return rec, e.Serve(rec, httptest.NewRequest(method, path, nil))
	}
	if _, ok := serve(http.MethodGet, "/metricsx"); ok {
		t.Error("served another path")
	}
	rec, ok := serve(http.MethodGet, Path)
	if !ok || rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `apiserver_request_total{code="200",component="apiserver"`) ||
		!strings.Contains(rec.Body.String(), "go_goroutines ") {
		t.Errorf("GET: %v %d %s", ok, rec.Code, rec.Body)
	}
	refuse = true
	if rec, _ := serve(http.MethodDelete, Path); rec.Code != http.StatusForbidden {
		t.Errorf("refused DELETE: %d %s", rec.Code, rec.Body)
	}
	if n := metricstest.Sum(t, reg, "apiserver_request_total", nil); n != 1 {
		t.Errorf("a refused DELETE reset the metrics: %v", n)
	}
	refuse = false
	if rec, _ := serve(http.MethodDelete, Path); rec.Code != http.StatusOK {
		t.Errorf("DELETE: %d %s", rec.Code, rec.Body)
	}
	if n := metricstest.Sum(t, reg, "apiserver_request_total", nil); n != 0 {
		t.Errorf("after the reset apiserver_request_total sums to %v", n)
	}
}
