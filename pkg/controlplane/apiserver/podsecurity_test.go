package apiserver

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeagent/nodeagent/pkg/controlplane/apiserver/request"
)

var admin = request.User{Name: "kubernetes-admin", Groups: []string{"system:masters"}}

// serveAs sends one request through the handler as u and returns the
// recorded response. PATCH bodies are merge patches.
func serveAs(t *testing.T, u request.User, method, path, body string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if method == http.MethodPatch {
		req.Header.Set("Content-Type", "application/merge-patch+json")
	}
	req = req.WithContext(request.WithUser(req.Context(), u))
	rec := httptest.NewRecorder()
	testSrv.Handler().ServeHTTP(rec, req)
	return rec
}

// statusMessage is the message of a Status answer.
func statusMessage(t *testing.T, rec *httptest.ResponseRecorder) string {
	t.Helper()
	var st metav1.Status
	if err := json.Unmarshal(rec.Body.Bytes(), &st); err != nil {
		t.Fatalf("not a Status: %v: %s", err, rec.Body)
	}
	return st.Message
}

// awaitNamespaceCache returns once the namespace cache, which admission
// reads as upstream reads its informer, holds the namespace just written.
func awaitNamespaceCache(t *testing.T, written *httptest.ResponseRecorder) {
	t.Helper()
	var ns v1.Namespace
	if err := json.Unmarshal(written.Body.Bytes(), &ns); err != nil {
		t.Fatal(err)
	}
	opts := metav1.ListOptions{ResourceVersion: ns.ResourceVersion, ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan}
	if _, err := client.CoreV1().Namespaces().List(ctxT(t), opts); err != nil {
		t.Fatal(err)
	}
}

func labelledNamespace(t *testing.T, labels map[string]string) string {
	t.Helper()
	ns := &v1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "psa-", Labels: labels}}
	created, err := client.CoreV1().Namespaces().Create(ctxT(t), ns, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return created.Name
}

const (
	plainPod      = `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[{"name":"c","image":"busybox:1"}]}}`
	privilegedPod = `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[{"name":"c","image":"busybox:1","securityContext":{"privileged":true}}]}}`
	// What the restricted level asks of a plain container, in upstream's words.
	restrictedDetail = `allowPrivilegeEscalation != false (container "c" must set securityContext.allowPrivilegeEscalation=false), ` +
		`unrestricted capabilities (container "c" must set securityContext.capabilities.drop=["ALL"]), ` +
		`runAsNonRoot != true (pod or container "c" must set securityContext.runAsNonRoot=true), ` +
		`seccompProfile (pod or container "c" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")`
	privilegedDetail = `privileged (container "c" must not set securityContext.privileged=true)`
)

func TestPodSecurityPods(t *testing.T) {
	cases := []struct {
		name        string
		labels      map[string]string
		pod         string
		wantCode    int
		wantMessage string
		wantWarning string
	}{
		{"no labels: privileged", nil, privilegedPod, http.StatusCreated, "", ""},
		{"enforce restricted: plain", map[string]string{"pod-security.kubernetes.io/enforce": "restricted"}, plainPod,
			http.StatusForbidden, `pods "p" is forbidden: violates PodSecurity "restricted:latest": ` + restrictedDetail, ""},
		{"enforce baseline: plain", map[string]string{"pod-security.kubernetes.io/enforce": "baseline"}, plainPod, http.StatusCreated, "", ""},
		{"enforce baseline v1.30: privileged", map[string]string{"pod-security.kubernetes.io/enforce": "baseline", "pod-security.kubernetes.io/enforce-version": "v1.30"},
			privilegedPod, http.StatusForbidden, `pods "p" is forbidden: violates PodSecurity "baseline:v1.30": ` + privilegedDetail, ""},
		{"warn baseline: privileged", map[string]string{"pod-security.kubernetes.io/warn": "baseline"}, privilegedPod,
			http.StatusCreated, "", `299 - "would violate PodSecurity \"baseline:latest\": ` + strings.ReplaceAll(privilegedDetail, `"`, `\"`) + `"`},
		{"audit restricted only: plain", map[string]string{"pod-security.kubernetes.io/audit": "restricted"}, plainPod, http.StatusCreated, "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ns := labelledNamespace(t, tc.labels)
			rec := serveAs(t, admin, http.MethodPost, "/api/v1/namespaces/"+ns+"/pods", tc.pod)
			if rec.Code != tc.wantCode {
				t.Fatalf("create: %d %s, want %d", rec.Code, rec.Body, tc.wantCode)
			}
			if tc.wantMessage != "" {
				if got := statusMessage(t, rec); got != tc.wantMessage {
					t.Errorf("message:\n got %s\nwant %s", got, tc.wantMessage)
				}
			}
			if got := strings.Join(rec.Header().Values("Warning"), "\n"); got != tc.wantWarning {
				t.Errorf("Warning header:\n got %s\nwant %s", got, tc.wantWarning)
			}
		})
	}
}

func TestPodSecurityPodUpdates(t *testing.T) {
	ns := labelledNamespace(t, nil)
	if rec := serveAs(t, admin, http.MethodPost, "/api/v1/namespaces/"+ns+"/pods", plainPod); rec.Code != http.StatusCreated {
		t.Fatalf("create: %d %s", rec.Code, rec.Body)
	}
	rec := serveAs(t, admin, http.MethodPatch, "/api/v1/namespaces/"+ns, `{"metadata":{"labels":{"pod-security.kubernetes.io/enforce":"restricted"}}}`)
	if rec.Code != http.StatusOK {
		t.Fatalf("label namespace: %d %s", rec.Code, rec.Body)
	}
	awaitNamespaceCache(t, rec)
	pod := "/api/v1/namespaces/" + ns + "/pods/p"
	// Only image changes are evaluated on update, as upstream.
	if rec := serveAs(t, admin, http.MethodPatch, pod, `{"metadata":{"labels":{"x":"y"}}}`); rec.Code != http.StatusOK {
		t.Errorf("label a running pod: %d %s", rec.Code, rec.Body)
	}
	// A JSON patch: a merge patch would replace the container and drop
	// the API access mount the ServiceAccount admission added.
	req := httptest.NewRequest(http.MethodPatch, pod, strings.NewReader(`[{"op":"replace","path":"/spec/containers/0/image","value":"busybox:2"}]`))
	req.Header.Set("Content-Type", "application/json-patch+json")
	rec = httptest.NewRecorder()
	testSrv.Handler().ServeHTTP(rec, req.WithContext(request.WithUser(req.Context(), admin)))
	want := `pods "p" is forbidden: violates PodSecurity "restricted:latest": ` + restrictedDetail
	if rec.Code != http.StatusForbidden || statusMessage(t, rec) != want {
		t.Errorf("change the image: %d %s, want 403 %s", rec.Code, rec.Body, want)
	}
}

func TestPodSecurityWorkloadsWarnOnly(t *testing.T) {
	ns := labelledNamespace(t, map[string]string{"pod-security.kubernetes.io/enforce": "baseline"})
	deploy := `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d"},"spec":{"selector":{"matchLabels":{"app":"d"}},
		"template":{"metadata":{"labels":{"app":"d"}},"spec":{"containers":[{"name":"c","image":"busybox:1","securityContext":{"privileged":true}}]}}}}`
	rec := serveAs(t, admin, http.MethodPost, "/apis/apps/v1/namespaces/"+ns+"/deployments", deploy)
	if rec.Code != http.StatusCreated {
		t.Fatalf("create deployment: %d %s", rec.Code, rec.Body)
	}
	// warn follows enforce when it has no label of its own.
	want := `299 - "would violate PodSecurity \"baseline:latest\": ` + strings.ReplaceAll(privilegedDetail, `"`, `\"`) + `"`
	if got := rec.Header().Get("Warning"); got != want {
		t.Errorf("Warning:\n got %s\nwant %s", got, want)
	}
}

func TestPodSecurityNamespaceLabels(t *testing.T) {
	bad := `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"psa-bad","labels":{"pod-security.kubernetes.io/enforce":"strict"}}}`
	rec := serveAs(t, admin, http.MethodPost, "/api/v1/namespaces", bad)
	want := `Namespace "psa-bad" is invalid: metadata.labels[pod-security.kubernetes.io/enforce]: Invalid value: "strict": must be one of privileged, baseline, restricted`
	if rec.Code != http.StatusUnprocessableEntity || statusMessage(t, rec) != want {
		t.Errorf("create with a bad level: %d %s, want 422 %s", rec.Code, rec.Body, want)
	}

	ns := labelledNamespace(t, nil)
	rec = serveAs(t, admin, http.MethodPatch, "/api/v1/namespaces/"+ns, `{"metadata":{"labels":{"pod-security.kubernetes.io/warn-version":"1.30"}}}`)
	want = `Namespace "` + ns + `" is invalid: metadata.labels[pod-security.kubernetes.io/warn-version]: Invalid value: "1.30": must be "latest" or "v1.x"`
	if rec.Code != http.StatusUnprocessableEntity || statusMessage(t, rec) != want {
		t.Errorf("label with a bad version: %d %s, want 422 %s", rec.Code, rec.Body, want)
	}

	// Tightening enforce warns about the pods already there.
	if rec := serveAs(t, admin, http.MethodPost, "/api/v1/namespaces/"+ns+"/pods", privilegedPod); rec.Code != http.StatusCreated {
		t.Fatalf("create pod: %d %s", rec.Code, rec.Body)
	}
	rec = serveAs(t, admin, http.MethodPatch, "/api/v1/namespaces/"+ns, `{"metadata":{"labels":{"pod-security.kubernetes.io/enforce":"baseline"}}}`)
	if rec.Code != http.StatusOK {
		t.Fatalf("label: %d %s", rec.Code, rec.Body)
	}
	wantWarnings := []string{
		`299 - "existing pods in namespace \"` + ns + `\" violate the new PodSecurity enforce level \"baseline:latest\""`,
		`299 - "p: privileged"`,
	}
	if got := rec.Header().Values("Warning"); strings.Join(got, "\n") != strings.Join(wantWarnings, "\n") {
		t.Errorf("warnings:\n got %q\nwant %q", got, wantWarnings)
	}
}
