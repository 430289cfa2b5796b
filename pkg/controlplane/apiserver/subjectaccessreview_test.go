package apiserver

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	authzv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeagent/nodeagent/pkg/controlplane/apiserver/request"
)

type sarCase struct {
	name  string
	spec  authzv1.SubjectAccessReviewSpec
	attrs *authzv1.ResourceAttributes
	want  bool
}

func TestSubjectAccessReview(t *testing.T) {
	kubeletClient := authzv1.SubjectAccessReviewSpec{User: "kube-apiserver-kubelet-client", Groups: []string{"system:masters", "system:authenticated"}}
	node := authzv1.SubjectAccessReviewSpec{User: "system:node:node-a", Groups: []string{"system:nodes", "system:authenticated"}}
	bob := authzv1.SubjectAccessReviewSpec{User: "bob", Groups: []string{"system:authenticated"}}
	nodeProxy := &authzv1.ResourceAttributes{Verb: "get", Resource: "nodes", Subresource: "proxy", Name: "node-a"}
	tests := []sarCase{
		{"the API server's kubelet client gets nodes/proxy", kubeletClient, nodeProxy, true},
		{"the API server's kubelet client gets nodes/log", kubeletClient, &authzv1.ResourceAttributes{Verb: "get", Resource: "nodes", Subresource: "log", Name: "node-a"}, true},
		{"a node gets its own nodes/proxy", node, nodeProxy, false},
		{"a node gets its node", node, &authzv1.ResourceAttributes{Verb: "get", Resource: "nodes", Name: "node-a"}, true},
		{"a node lists its pods", node, &authzv1.ResourceAttributes{Verb: "list", Resource: "pods",
			FieldSelector: &authzv1.FieldSelectorAttributes{RawSelector: "spec.nodeName=node-a"}}, true},
		{"a node lists all pods", node, &authzv1.ResourceAttributes{Verb: "list", Resource: "pods"}, false},
		{"a node execs into a pod", node, &authzv1.ResourceAttributes{Verb: "create", Resource: "pods", Subresource: "exec", Namespace: "default", Name: "p"}, false},
		{"bob gets nodes/proxy", bob, nodeProxy, false},
		{"any version", kubeletClient, &authzv1.ResourceAttributes{Verb: "get", Version: "*", Resource: "nodes"}, true},
		// Issue 16, finding 8: what a node may do with Node objects.
		{"a node registers", node, &authzv1.ResourceAttributes{Verb: "create", Resource: "nodes"}, true},
		{"a node updates its node", node, &authzv1.ResourceAttributes{Verb: "update", Resource: "nodes", Name: "node-a"}, true},
		{"a node patches its node status", node, &authzv1.ResourceAttributes{Verb: "patch", Resource: "nodes", Subresource: "status", Name: "node-a"}, true},
		{"a node updates its node status", node, &authzv1.ResourceAttributes{Verb: "update", Resource: "nodes", Subresource: "status", Name: "node-a"}, true},
		{"a node deletes its node", node, &authzv1.ResourceAttributes{Verb: "delete", Resource: "nodes", Name: "node-a"}, false},
	}
	for _, sub := range []string{"proxy", "pods", "stats", "metrics", "configz", "log", "checkpoint"} {
		tests = append(tests,
			sarCase{"a node gets another node's nodes/" + sub, node, &authzv1.ResourceAttributes{Verb: "get", Resource: "nodes", Subresource: sub, Name: "node-b"}, false},
			sarCase{"a node creates another node's nodes/" + sub, node, &authzv1.ResourceAttributes{Verb: "create", Resource: "nodes", Subresource: sub, Name: "node-b"}, false})
	}
	for _, tc := range tests {
		spec := tc.spec
		spec.ResourceAttributes = tc.attrs
		got, err := client.AuthorizationV1().SubjectAccessReviews().Create(ctxT(t), &authzv1.SubjectAccessReview{Spec: spec}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got.Status.Allowed != tc.want || got.Spec.User != tc.spec.User {
			t.Errorf("%s: got allowed %v (spec %+v), want %v", tc.name, got.Status.Allowed, got.Spec, tc.want)
		}
	}
	_, err := client.AuthorizationV1().SubjectAccessReviews().Create(ctxT(t), &authzv1.SubjectAccessReview{
		Spec: authzv1.SubjectAccessReviewSpec{ResourceAttributes: nodeProxy}}, metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.user: Invalid value: \"\": at least one of user or group must be specified") {
		t.Errorf("review without a subject: got %v", err)
	}
}

func TestWhoMayUseTheKubeletsAndReviews(t *testing.T) {
	node := request.User{Name: "system:node:node-a", Groups: []string{"system:nodes", "system:authenticated"}}
	stranger := request.User{Name: "bob", Groups: []string{"system:authenticated"}}
	sar := `{"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview","spec":{"user":"bob","resourceAttributes":{"verb":"get","resource":"pods"}}}`
	serviceAccount := request.User{Name: "system:serviceaccount:default:default", Groups: []string{"system:serviceaccounts", "system:serviceaccounts:default", "system:authenticated"}}
	const tokenReviews = "/apis/authentication.k8s.io/v1/tokenreviews"
	const tokenReview = `{"apiVersion":"authentication.k8s.io/v1","kind":"TokenReview","spec":{"token":"x"}}`
	tests := []struct {
		name, method, path, body string
		user                     request.User
		want                     int
	}{
		{"a node proxies to its kubelet", http.MethodGet, "/api/v1/nodes/node-a/proxy/healthz", "", node, http.StatusForbidden},
		{"a node proxies to another kubelet's stats", http.MethodGet, "/api/v1/nodes/node-b/proxy/stats/summary", "", node, http.StatusForbidden},
		{"a node proxies to another kubelet's pods", http.MethodGet, "/api/v1/nodes/node-b/proxy/pods", "", node, http.StatusForbidden},
		{"a node reads a pod log", http.MethodGet, "/api/v1/namespaces/default/pods/p/log", "", node, http.StatusForbidden},
		{"a node execs", http.MethodPost, "/api/v1/namespaces/default/pods/p/exec?command=true", "", node, http.StatusForbidden},
		{"a node port-forwards", http.MethodGet, "/api/v1/namespaces/default/pods/p/portforward", "", node, http.StatusForbidden},
		{"a node reviews access", http.MethodPost, "/apis/authorization.k8s.io/v1/subjectaccessreviews", sar, node, http.StatusCreated},
		{"a stranger reviews access", http.MethodPost, "/apis/authorization.k8s.io/v1/subjectaccessreviews", sar, stranger, http.StatusForbidden},
		{"a stranger reviews its own access", http.MethodPost, "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
			`{"spec":{"resourceAttributes":{"verb":"get","resource":"pods"}}}`, stranger, http.StatusCreated},
		// TokenReview: the callers upstream's bootstrap policy allows.
		{"a stranger reviews a token", http.MethodPost, tokenReviews, tokenReview, stranger, http.StatusForbidden},
		{"a service account reviews a token", http.MethodPost, tokenReviews, tokenReview, serviceAccount, http.StatusForbidden},
		{"a service account reviews access", http.MethodPost, "/apis/authorization.k8s.io/v1/subjectaccessreviews", sar, serviceAccount, http.StatusForbidden},
		{"a node reviews a token", http.MethodPost, tokenReviews, tokenReview, node, http.StatusCreated},
		{"the controller manager reviews a token", http.MethodPost, tokenReviews, tokenReview, request.User{Name: "system:kube-controller-manager", Groups: []string{"system:authenticated"}}, http.StatusCreated},
		{"the scheduler reviews access", http.MethodPost, "/apis/authorization.k8s.io/v1/subjectaccessreviews", sar, request.User{Name: "system:kube-scheduler", Groups: []string{"system:authenticated"}}, http.StatusCreated},
		{"a master reviews a token", http.MethodPost, tokenReviews, tokenReview, request.User{Name: "admin", Groups: []string{"system:masters"}}, http.StatusCreated},
	}
	for _, tc := range tests {
		req := httptest.NewRequest(tc.method, tc.path, strings.NewReader(tc.body))
		req.Header.Set("Content-Type", "application/json")
		req = req.WithContext(request.WithUser(req.Context(), tc.user))
		rec := httptest.NewRecorder()
		testSrv.Handler().ServeHTTP(rec, req)
		if rec.Code != tc.want {
			t.Errorf("%s: got %d %s, want %d", tc.name, rec.Code, rec.Body, tc.want)
		}
	}
}
