package apiserver

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/nodeagent/nodeagent/pkg/controlplane/apiserver/inflight"
	"github.com/nodeagent/nodeagent/pkg/controlplane/apiserver/request"
	"github.com/nodeagent/nodeagent/pkg/controlplane/internal/metricstest"
)

// The refusals an attack produces are in apiserver_request_total with
// their code, through the handler chain the server runs (the in-flight
// limit before the API): 429, 413, 403; 500 is TestHandlerPanicIs500AndCounted.
func TestRefusedRequestsCounted(t *testing.T) {
	ns := testNamespace(t)
	alice := request.User{Name: "alice", Groups: []string{"system:authenticated"}}
	admin := request.User{Name: "admin", Groups: []string{"system:masters"}}

	// One read-only slot, held by a request parked in the chain.
	hold, release := make(chan struct{}), make(chan struct{})
	api := testSrv.Handler()
	chain := inflight.New(inflight.Config{MaxRequestsInFlight: 1, MaxMutatingRequestsInFlight: 1, OnReject: testSrv.RecordTooManyRequests},
		http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("X-Test-Hold") != "" {
				close(hold)
				<-release
			}
			api.ServeHTTP(w, r)
		}))
	serve := func(u request.User, method, path string, body []byte, header string) int {
		req := httptest.NewRequest(method, path, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		if header != "" {
			req.Header.Set("X-Test-Hold", header)
		}
		req = req.WithContext(request.WithUser(req.Context(), u))
		rec := httptest.NewRecorder()
		chain.ServeHTTP(rec, req)
		return rec.Code
	}

	tooMany := map[string]string{"verb": "LIST", "resource": "pods", "scope": "namespace", "code": "429", "component": "apiserver"}
	tooLarge := map[string]string{"verb": "POST", "resource": "configmaps", "scope": "resource", "code": "413"}
	forbidden := map[string]string{"verb": "LIST", "resource": "secrets", "scope": "namespace", "code": "403"}
	before := map[string]float64{}
	for name, l := range map[string]map[string]string{"429": tooMany, "413": tooLarge, "403": forbidden} {
		before[name] = requestCount(t, l)
	}
	terminated := metricstest.Sum(t, testSrv.cfg.Metrics, "apiserver_request_terminations_total", map[string]string{"verb": "LIST", "resource": "pods", "code": "429"})

	held := make(chan int)
	go func() { held <- serve(admin, "GET", "/api/v1/namespaces/"+ns+"/pods", nil, "hold") }()
	<-hold
	if code := serve(alice, "GET", "/api/v1/namespaces/"+ns+"/pods", nil, ""); code != http.StatusTooManyRequests {
		t.Errorf("a read over the limit: %d, want 429", code)
	}
	close(release)
	if code := <-held; code != http.StatusOK {
		t.Errorf("the held request: %d", code)
	}
	big := append([]byte(`{"metadata":{"name":"big"},"data":{"a":"`), bytes.Repeat([]byte("x"), 3<<20)...)
	big = append(big, `"}}`...)
	if code := serve(admin, "POST", "/api/v1/namespaces/"+ns+"/configmaps", big, ""); code != http.StatusRequestEntityTooLarge {
		t.Errorf("a body over 3 MiB: %d, want 413", code)
	}
	if code := serve(alice, "GET", "/api/v1/namespaces/"+ns+"/secrets", nil, ""); code != http.StatusForbidden {
		t.Errorf("alice listing secrets: %d, want 403", code)
	}

	for name, l := range map[string]map[string]string{"429": tooMany, "413": tooLarge, "403": forbidden} {
		if got := requestCount(t, l) - before[name]; got != 1 {
			t.Errorf("%s %v: apiserver_request_total moved by %v, want 1", name, l, got)
		}
	}
	if got := metricstest.Sum(t, testSrv.cfg.Metrics, "apiserver_request_terminations_total", map[string]string{"verb": "LIST", "resource": "pods", "code": "429"}) - terminated; got != 1 {
		t.Errorf("apiserver_request_terminations_total moved by %v, want 1", got)
	}
}
