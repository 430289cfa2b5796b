package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
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

func TestServeAnswersAPanicWith500AndKeepsServing(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelError}))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	h := HealthzHandler(func() error { panic("health check bug") })
	addr, done, err := Serve(ctx, "127.0.0.1:0", h, log)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		resp, err := http.Get("http://" + addr.String() + "/healthz")
		if err != nil {
			t.Fatalf("GET /healthz: %v", err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusInternalServerError {
			t.Errorf("GET /healthz: %d, want 500", resp.StatusCode)
		}
	}
	if !strings.Contains(buf.String(), "level=ERROR") || !strings.Contains(buf.String(), "health check bug") {
		t.Errorf("panic not logged at error:\n%s", buf.String())
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("serve: %v", err)
	}
}
