package nodeapi

import (
	"bytes"
	"log/slog"
	"net/http"
	"strings"
	"testing"
)

func TestHandlerPanicIs500AndLogged(t *testing.T) {
	var buf bytes.Buffer
	s, err := New(Config{
		NodeName: "node1", Pods: podList{}, Runtime: &fakeRuntime{},
		Authenticator: NewAuthenticator(AuthnConfig{Anonymous: true}), Authorizer: AlwaysAllow(),
		Logger:     slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelError})),
		Monitoring: Monitoring{Summary: http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic("summary bug") })},
	})
	if err != nil {
		t.Fatal(err)
	}
	if rec := get(t, s.Handler(), "/stats/summary"); rec.Code != http.StatusInternalServerError {
		t.Errorf("/stats/summary: %d %q, want 500", rec.Code, rec.Body)
	}
	for _, want := range []string{"level=ERROR", "method=GET", "path=/stats/summary", "user=system:anonymous", "panic=\"summary bug\""} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("log lacks %s:\n%s", want, buf.String())
		}
	}
	if rec := get(t, s.Handler(), "/healthz"); rec.Code != http.StatusOK {
		t.Errorf("/healthz after the panic: %d", rec.Code)
	}
}
