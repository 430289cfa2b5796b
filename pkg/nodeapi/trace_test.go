package nodeapi

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeagent/nodeagent/pkg/podtrace"
)

func TestPodTraceServesTheStepLog(t *testing.T) {
	traces := podtrace.New(podtrace.Config{})
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "u1"}}
	start := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	traces.Record(pod, podtrace.Step{Name: podtrace.StepSandbox, Start: start, End: start.Add(time.Second)})
	s, err := New(Config{
		NodeName: "node1", Pods: podList{}, Runtime: &fakeRuntime{},
		Authenticator: NewAuthenticator(AuthnConfig{Anonymous: true}), Authorizer: AlwaysAllow(),
		Traces: traces, Logger: quietLogger(),
	})
	if err != nil {
		t.Fatal(err)
	}
	rec := get(t, s.Handler(), podtrace.Path("ns", "web")+"?uid=u1")
	var tr podtrace.Trace
	if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &tr) != nil {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
	if tr.UID != "u1" || len(tr.Steps) != 1 || tr.Steps[0].Duration() != time.Second {
		t.Errorf("trace %+v", tr)
	}
	for _, path := range []string{podtrace.Path("ns", "other"), podtrace.Path("ns", "web") + "?uid=u2"} {
		if rec := get(t, s.Handler(), path); rec.Code != http.StatusNotFound {
			t.Errorf("GET %s: %d, want 404", path, rec.Code)
		}
	}
	// Without a step log, the path is not served at all.
	if rec := get(t, openServer(t, podList{}, &fakeRuntime{}).Handler(), podtrace.Path("ns", "web")); rec.Code != http.StatusNotFound {
		t.Errorf("without traces: %d, want 404", rec.Code)
	}
}
