package apiserver

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func postPod(t *testing.T, ns, query, body string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, baseURL+"/api/v1/namespaces/"+ns+"/pods"+query, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func TestOpenAPIFieldValidation(t *testing.T) {
	ns := testNamespace(t)
	pod := func(name string) string {
		return `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"` + name + `"},"spec":{"foo":1,"containers":[{"name":"c","image":"busybox"}]}}`
	}
	resp, body := postPod(t, ns, "?fieldValidation=Strict", pod("strict"))
	var st metav1.Status
	_ = json.Unmarshal([]byte(body), &st)
	if resp.StatusCode != http.StatusBadRequest || st.Reason != metav1.StatusReasonBadRequest || st.Message != `strict decoding error: unknown field "spec.foo"` {
		t.Errorf("Strict: %d %s", resp.StatusCode, body)
	}
	resp, body = postPod(t, ns, "?fieldValidation=Strict", `{"metadata":{"name":"dup","name":"dup"},"spec":{"containers":[{"name":"c","image":"busybox"}]}}`)
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, `duplicate field \"metadata.name\"`) {
		t.Errorf("Strict duplicate: %d %s", resp.StatusCode, body)
	}
	// Without the parameter: Warn, upstream's default (kubectl sends
	// Strict itself, --validate=strict).
	for _, q := range []string{"?fieldValidation=Warn", ""} {
		name := "warn" + strings.ToLower(strings.TrimPrefix(q, "?fieldValidation="))
		resp, body = postPod(t, ns, q, pod(name))
		if resp.StatusCode != http.StatusCreated || resp.Header.Get("Warning") != `299 - "unknown field \"spec.foo\""` {
			t.Errorf("%q: %d %q %s", q, resp.StatusCode, resp.Header.Get("Warning"), body)
		}
	}
	if resp, body = postPod(t, ns, "?fieldValidation=Ignore", pod("ignore")); resp.StatusCode != http.StatusCreated || resp.Header.Get("Warning") != "" {
		t.Errorf("Ignore: %d %q %s", resp.StatusCode, resp.Header.Get("Warning"), body)
	}
	if resp, body = postPod(t, ns, "?fieldValidation=Bogus", pod("bogus")); resp.StatusCode != http.StatusUnprocessableEntity {
		t.Errorf("Bogus: %d %s", resp.StatusCode, body)
	}
	// A strategic merge patch's directives are not unknown fields.
	req, _ := http.NewRequest(http.MethodPatch, baseURL+"/api/v1/namespaces/"+ns+"/pods/warn?fieldValidation=Strict",
		strings.NewReader(`{"metadata":{"labels":{"a":"b"}},"spec":{"$setElementOrder/containers":[{"name":"c"}],"containers":[{"name":"c","image":"busybox:2"}]}}`))
	req.Header.Set("Content-Type", "application/strategic-merge-patch+json")
	presp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	pbody, _ := io.ReadAll(presp.Body)
	presp.Body.Close()
	if presp.StatusCode != http.StatusOK {
		t.Errorf("strategic merge patch: %d %s", presp.StatusCode, pbody)
	}
}
