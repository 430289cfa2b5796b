package apiserver

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	authzv1 "k8s.io/api/authorization/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeagent/nodeagent/pkg/controlplane/apiserver/authz"
	"github.com/nodeagent/nodeagent/pkg/controlplane/apiserver/request"
)

// The groups the core's tests use, by their authz names.
const (
	mastersGroup    = authz.MastersGroup
	nodesGroup      = authz.NodesGroup
	monitoringGroup = authz.MonitoringGroup
)

// asUser runs one request through the handler as an authenticated user.
func asUser(t *testing.T, u request.User, method, path string) int {
	t.Helper()
	req := httptest.NewRequest(method, path, nil)
	req = req.WithContext(request.WithUser(req.Context(), u))
	rec := httptest.NewRecorder()
	testSrv.Handler().ServeHTTP(rec, req)
	return rec.Code
}

func TestNodeAuthorizer(t *testing.T) {
	ns := testNamespace(t)
	mine := testPod("mine")
	mine.Spec.NodeName = "node-a"
	mine.Spec.Volumes = []v1.Volume{{Name: "s", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "used"}}}}
	theirs := testPod("theirs")
	theirs.Spec.NodeName = "node-b"
	for _, p := range []*v1.Pod{mine, theirs} {
		if _, err := client.CoreV1().Pods(ns).Create(ctxT(t), p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"used", "unused"} {
		if _, err := client.CoreV1().Secrets(ns).Create(ctxT(t), &v1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	node := request.User{Name: "system:node:node-a", Groups: []string{"system:nodes", "system:authenticated"}}
	stranger := request.User{Name: "bob", Groups: []string{"system:authenticated"}}
	admin := request.User{Name: "kubernetes-admin", Groups: []string{"system:masters"}}
	pods := "/api/v1/namespaces/" + ns + "/pods"
	cases := []struct {
		name   string
		user   request.User
		method string
		path   string
		want   int
	}{
		{"admin lists pods", admin, http.MethodGet, pods, http.StatusOK},
		{"stranger lists pods", stranger, http.MethodGet, pods, http.StatusForbidden},
		{"node lists all pods", node, http.MethodGet, "/api/v1/pods", http.StatusForbidden},
		{"node lists its pods", node, http.MethodGet, "/api/v1/pods?fieldSelector=spec.nodeName%3Dnode-a", http.StatusOK},
		{"node lists another node's pods", node, http.MethodGet, "/api/v1/pods?fieldSelector=spec.nodeName%3Dnode-b", http.StatusForbidden},
		{"node gets its pod", node, http.MethodGet, pods + "/mine", http.StatusOK},
		{"node gets another node's pod", node, http.MethodGet, pods + "/theirs", http.StatusForbidden},
		{"node reads its pod's resize", node, http.MethodGet, pods + "/mine/resize", http.StatusForbidden},
		{"node resizes its pod", node, http.MethodPatch, pods + "/mine/resize", http.StatusForbidden},
		{"admin reads a pod's resize", admin, http.MethodGet, pods + "/mine/resize", http.StatusOK},
		{"node reads a secret its pod uses", node, http.MethodGet, "/api/v1/namespaces/" + ns + "/secrets/used", http.StatusOK},
		{"node reads another secret", node, http.MethodGet, "/api/v1/namespaces/" + ns + "/secrets/unused", http.StatusForbidden},
		{"node lists secrets", node, http.MethodGet, "/api/v1/namespaces/" + ns + "/secrets", http.StatusForbidden},
		{"node reads its node", node, http.MethodGet, "/api/v1/nodes/node-a", http.StatusNotFound},
		{"node deletes another node", node, http.MethodDelete, "/api/v1/nodes/node-b", http.StatusForbidden},
		{"node reads its lease", node, http.MethodGet, "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/node-a", http.StatusNotFound},
		{"node reads another lease", node, http.MethodGet, "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/node-b", http.StatusForbidden},
		{"node lists services", node, http.MethodGet, "/api/v1/services", http.StatusOK},
		// Through RBAC's system:node-proxier binding only (the server makes it).
		{"node lists endpoint slices", node, http.MethodGet, "/apis/discovery.k8s.io/v1/endpointslices", http.StatusForbidden},
		{"node lists other nodes", node, http.MethodGet, "/api/v1/nodes", http.StatusForbidden},
		{"node deletes an endpoint slice", node, http.MethodDelete, "/apis/discovery.k8s.io/v1/namespaces/" + ns + "/endpointslices/x", http.StatusForbidden},
		{"node requests a token for another service account", node, http.MethodPost, "/api/v1/namespaces/" + ns + "/serviceaccounts/other/token", http.StatusForbidden},
	}
	// Its pods' service account: allowed (the empty body is then refused as bad input).
	if got := asUser(t, node, http.MethodPost, "/api/v1/namespaces/"+ns+"/serviceaccounts/default/token"); got == http.StatusForbidden {
		t.Errorf("node may not request a token for its pod's service account")
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := asUser(t, tc.user, tc.method, tc.path); got != tc.want {
				t.Errorf("%s %s as %s: %d, want %d", tc.method, tc.path, tc.user.Name, got, tc.want)
			}
		})
	}
}

func TestSelfSubjectAccessReview(t *testing.T) {
	review := func(u request.User, verb, resource, ns string) bool {
		t.Helper()
		body := `{"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectAccessReview","spec":{"resourceAttributes":{"verb":"` +
			verb + `","resource":"` + resource + `","namespace":"` + ns + `"}}}`
		req := httptest.NewRequest(http.MethodPost, "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req = req.WithContext(request.WithUser(req.Context(), u))
		rec := httptest.NewRecorder()
		testSrv.Handler().ServeHTTP(rec, req)
		var out authzv1.SelfSubjectAccessReview
		if rec.Code != http.StatusCreated || json.Unmarshal(rec.Body.Bytes(), &out) != nil {
			t.Fatalf("review: %d %s", rec.Code, rec.Body.String())
		}
		return out.Status.Allowed
	}
	admin := request.User{Name: "kubernetes-admin", Groups: []string{"system:masters"}}
	node := request.User{Name: "system:node:node-a", Groups: []string{"system:nodes"}}
	stranger := request.User{Name: "bob", Groups: []string{"system:authenticated"}}
	if !review(admin, "create", "pods", "default") {
		t.Error("admin may not create pods")
	}
	if review(stranger, "create", "pods", "default") {
		t.Error("a stranger may create pods")
	}
	if !review(node, "list", "services", "") || review(node, "list", "secrets", "default") {
		t.Error("node: services should be listable, secrets not")
	}
}
