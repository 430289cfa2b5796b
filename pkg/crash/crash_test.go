package crash

import (
	"bytes"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/component-base/metrics"
)

func logger(buf *bytes.Buffer) *slog.Logger {
	return slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{Level: slog.LevelError}))
}

func counted(t *testing.T, component, kind string) float64 {
	t.Helper()
	reg := metrics.NewKubeRegistry()
	if err := Register(reg); err != nil {
		t.Fatal(err)
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["component"] == component && labels["kind"] == kind {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

func TestHTTPRecoversWith500(t *testing.T) {
	var buf bytes.Buffer
	before := counted(t, "t-http", KindHTTP)
	h := HTTP(HTTPConfig{Component: "t-http", Logger: logger(&buf), User: func(*http.Request) string { return "alice" }},
		http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic(errors.New("boom")) }))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/api/v1/pods?x=1", nil))
	if rec.Code != http.StatusInternalServerError || strings.TrimSpace(rec.Body.String()) != PanicMessage {
		t.Errorf("got %d %q, want 500 %q", rec.Code, rec.Body.String(), PanicMessage)
	}
	for _, want := range []string{"level=ERROR", "method=POST", "path=\"/api/v1/pods?x=1\"", "user=alice", "panic=boom"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("log lacks %s:\n%s", want, buf.String())
		}
	}
	if got := counted(t, "t-http", KindHTTP); got != before+1 {
		t.Errorf("counter %v, want %v", got, before+1)
	}
}

func TestHTTPAfterResponseBeganAborts(t *testing.T) {
	h := HTTP(HTTPConfig{Component: "t-began", Logger: logger(&bytes.Buffer{})},
		http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(http.StatusOK)
			panic("late")
		}))
	defer func() {
		if v := recover(); v != http.ErrAbortHandler {
			t.Errorf("recovered %v, want http.ErrAbortHandler", v)
		}
		if got := counted(t, "t-began", KindHTTP); got != 1 {
			t.Errorf("counter %v, want 1", got)
		}
	}()
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/", nil))
}

func TestHTTPPassesErrAbortHandlerOn(t *testing.T) {
	var buf bytes.Buffer
	aborted := 0
	h := HTTP(HTTPConfig{Component: "t-abort", Logger: logger(&buf), OnAbort: func(*http.Request) { aborted++ }},
		http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic(http.ErrAbortHandler) }))
	func() {
		defer func() {
			if v := recover(); v != http.ErrAbortHandler {
				t.Errorf("recovered %v, want http.ErrAbortHandler", v)
			}
		}()
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/", nil))
	}()
	if aborted != 1 || buf.Len() != 0 || counted(t, "t-abort", KindHTTP) != 0 {
		t.Errorf("aborted=%d log=%q counter=%v: want one abort, no log, no crash counted", aborted, buf.String(), counted(t, "t-abort", KindHTTP))
	}
}

func TestHTTPServerKeepsServing(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/panic", func(http.ResponseWriter, *http.Request) { panic("boom") })
	mux.HandleFunc("/ok", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
	// Upgrades (exec, port-forward) find the connection by type assertion.
	mux.HandleFunc("/hijack", func(w http.ResponseWriter, _ *http.Request) {
		conn, buf, err := w.(http.Hijacker).Hijack()
		if err != nil {
			panic(err)
		}
		_, _ = buf.WriteString("HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n")
		_ = buf.Flush()
		_ = conn.Close()
	})
	srv := httptest.NewServer(HTTP(HTTPConfig{Component: "t-serve", Logger: logger(&bytes.Buffer{})}, mux))
	defer srv.Close()
	for _, c := range []struct {
		path string
		code int
	}{{"/panic", 500}, {"/ok", 200}, {"/hijack", 204}, {"/panic", 500}, {"/ok", 200}} {
		resp, err := http.Get(srv.URL + c.path)
		if err != nil {
			t.Fatalf("GET %s: %v", c.path, err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != c.code {
			t.Errorf("GET %s: %d, want %d", c.path, resp.StatusCode, c.code)
		}
	}
}

func TestEventHandlerSkipsThePanickingNotification(t *testing.T) {
	var buf bytes.Buffer
	var seen []string
	h := EventHandler(logger(&buf), "t-informer", cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			p := obj.(*v1.Pod)
			if p.Name == "bad" {
				panic("nil map")
			}
			seen = append(seen, p.Name)
		},
		DeleteFunc: func(any) { panic("delete") },
	})
	pod := func(name string) *v1.Pod { return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}} }
	h.OnAdd(pod("a"), false)
	h.OnAdd(pod("bad"), false)
	h.OnAdd(pod("b"), false)
	h.OnDelete(cache.DeletedFinalStateUnknown{Key: "ns/gone", Obj: pod("gone")})
	if strings.Join(seen, ",") != "a,b" {
		t.Errorf("seen %v, want a,b", seen)
	}
	for _, want := range []string{"add *v1.Pod ns/bad", "delete *v1.Pod ns/gone", "level=ERROR"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, buf.String())
		}
	}
	if got := counted(t, "t-informer", KindCallback); got != 2 {
		t.Errorf("counter %v, want 2", got)
	}
}
