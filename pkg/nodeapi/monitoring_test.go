package nodeapi

import (
	"context"
	"net/http"
	"testing"
)

func TestMonitoringRoutes(t *testing.T) {
	handler := func(body string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte(body)) })
	}
	s, err := New(Config{
		NodeName: "node1", Pods: podList{}, Runtime: &fakeRuntime{},
		Authenticator: NewAuthenticator(AuthnConfig{Anonymous: true}), Authorizer: AlwaysAllow(), Logger: quietLogger(),
		Monitoring: Monitoring{Metrics: handler("m"), ProbeMetrics: handler("p"), ResourceMetrics: handler("r"), Summary: handler("s")},
	})
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{"/metrics": "m", "/metrics/probes": "p", "/metrics/resource": "r", "/stats/summary": "s"} {
		if rec := get(t, s.Handler(), path); rec.Code != http.StatusOK || rec.Body.String() != want {
			t.Errorf("%s: %d %q", path, rec.Code, rec.Body)
		}
	}
	if rec := get(t, s.Handler(), "/metrics/cadvisor"); rec.Code != http.StatusNotFound {
		t.Errorf("/metrics/cadvisor: %d", rec.Code)
	}
	if rec := get(t, openServer(t, podList{}, &fakeRuntime{}).Handler(), "/metrics"); rec.Code != http.StatusNotFound {
		t.Errorf("/metrics without a handler: %d", rec.Code)
	}
}

func TestMonitoringIsAuthorizedAsMetricsAndStats(t *testing.T) {
	var seen []string
	authz := AuthorizerFunc(func(_ context.Context, a Attributes) (bool, string, error) {
		seen = append(seen, a.Subresource)
		return false, "no", nil
	})
	s, err := New(Config{
		NodeName: "node1", Pods: podList{}, Runtime: &fakeRuntime{}, Logger: quietLogger(),
		Authenticator: NewAuthenticator(AuthnConfig{Anonymous: true}), Authorizer: authz,
		Monitoring: Monitoring{Metrics: http.NotFoundHandler(), Summary: http.NotFoundHandler()},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/metrics", "/stats/summary"} {
		if rec := get(t, s.Handler(), path); rec.Code != http.StatusForbidden {
			t.Errorf("%s: %d", path, rec.Code)
		}
	}
	if len(seen) != 2 || seen[0] != "metrics" || seen[1] != "stats" {
		t.Errorf("subresources asked: %v", seen)
	}
}
