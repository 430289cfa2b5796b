package server

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

type podList []*v1.Pod

func (l podList) Pods() []*v1.Pod { return l }

func get(t *testing.T, h http.Handler, path string) *httptest.ResponseRecorder {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	return rec
}

func TestPodsReturnsAPodList(t *testing.T) {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-node", Namespace: "default", UID: "u1"},
		Status: v1.PodStatus{Phase: v1.PodRunning, PodIP: "10.0.0.2"}}
	rec := get(t, Handler(podList{pod}, nil), "/pods")
	if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != "application/json" {
		t.Fatalf("GET /pods: %d %q", rec.Code, rec.Header().Get("Content-Type"))
	}
	var list v1.PodList
	if err := json.Unmarshal(rec.Body.Bytes(), &list); err != nil {
		t.Fatal(err)
	}
	if list.Kind != "PodList" || list.APIVersion != "v1" || len(list.Items) != 1 ||
		list.Items[0].Name != "web-node" || list.Items[0].Status.PodIP != "10.0.0.2" {
		t.Errorf("unexpected list %+v", list)
	}
}

func TestPodsEmptyListIsAnArray(t *testing.T) {
	rec := get(t, Handler(podList{}, nil), "/pods")
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(rec.Body.Bytes(), &raw); err != nil {
		t.Fatal(err)
	}
	if string(raw["items"]) != "[]" {
		t.Errorf("items = %s, want []", raw["items"])
	}
}

func TestHealthz(t *testing.T) {
	if rec := get(t, Handler(podList{}, nil), "/healthz"); rec.Code != http.StatusOK || rec.Body.String() != "ok" {
		t.Errorf("healthy: %d %q", rec.Code, rec.Body.String())
	}
	sick := func() error { return errors.New("runtime down") }
	if rec := get(t, HealthzHandler(sick), "/healthz"); rec.Code != http.StatusInternalServerError {
		t.Errorf("unhealthy: %d %q", rec.Code, rec.Body.String())
	}
}

func TestWritesAreRefused(t *testing.T) {
	rec := httptest.NewRecorder()
	Handler(podList{}, nil).ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/pods", nil))
	if rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("POST /pods: %d, want 405", rec.Code)
	}
}
