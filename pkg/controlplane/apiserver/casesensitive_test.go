package apiserver

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeagent/nodeagent/pkg/controlplane/apiserver/request"
)

// TestJSONKeysAreCaseSensitive: issue 16. Upstream's serializer matches
// JSON keys to fields case-sensitively; "Name" is an unknown field, not a
// second metadata.name that wins over the first.
func TestJSONKeysAreCaseSensitive(t *testing.T) {
	ns := testNamespace(t)
	post := func(body string) *httptest.ResponseRecorder {
		t.Helper()
		req := httptest.NewRequest(http.MethodPost, "/api/v1/namespaces/"+ns+"/configmaps?fieldValidation=Warn", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req = req.WithContext(request.WithUser(req.Context(), request.User{Name: "admin", Groups: []string{"system:masters"}}))
		rec := httptest.NewRecorder()
		testSrv.Handler().ServeHTTP(rec, req)
		return rec
	}
	rec := post(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"lower","Name":"upper"},"Data":{"k":"wrong"},"data":{"k":"v"}}`)
	if rec.Code != http.StatusCreated {
		t.Fatalf("create: %d %s", rec.Code, rec.Body)
	}
	warnings := strings.Join(rec.Result().Header.Values("Warning"), "\n")
	for _, want := range []string{`unknown field \"metadata.Name\"`, `unknown field \"Data\"`} {
		if !strings.Contains(warnings, want) {
			t.Errorf("warnings lack %s:\n%s", want, warnings)
		}
	}
	cm, err := client.CoreV1().ConfigMaps(ns).Get(ctxT(t), "lower", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get lower: %v", err)
	}
	if cm.Data["k"] != "v" {
		t.Errorf("data %v, want k=v", cm.Data)
	}
	if _, err := client.CoreV1().ConfigMaps(ns).Get(ctxT(t), "upper", metav1.GetOptions{}); err == nil {
		t.Errorf("a config map named by metadata.Name exists")
	}

	// A case variant alone names nothing.
	if rec := post(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"NAME":"shouty"}}`); rec.Code != http.StatusUnprocessableEntity {
		t.Errorf("create with metadata.NAME only: %d %s, want 422", rec.Code, rec.Body)
	}
}
