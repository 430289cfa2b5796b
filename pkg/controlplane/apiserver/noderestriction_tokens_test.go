package apiserver

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeagent/nodeagent/pkg/controlplane/apiserver/request"
)

// tokenBody is a TokenRequest bound to a pod, with audiences as JSON.
func tokenBody(pod, uid, audiences string) string {
	return fmt.Sprintf(`{"apiVersion":"authentication.k8s.io/v1","kind":"TokenRequest","spec":{"audiences":%s,
		"boundObjectRef":{"apiVersion":"v1","kind":"Pod","name":%q,"uid":%q}}}`, audiences, pod, uid)
}

// TestNodeTokenRequests: a node gets tokens for its pods' service account
// only bound to one of its pods, and only for an audience that pod's
// volumes use (the API server's, "", for the admission's token volume).
func TestNodeTokenRequests(t *testing.T) {
	s := newTokenServer(t, newTestSigner(t), nil)
	ns := testNamespace(t)
	mine := testPod("mine")
	mine.Spec.NodeName = "tok-a"
	mine.Spec.Volumes = []v1.Volume{{Name: "vault", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{
		Sources: []v1.VolumeProjection{{ServiceAccountToken: &v1.ServiceAccountTokenProjection{Audience: "vault", Path: "t"}}}}}}}
	mine = createPodAs(t, ns, mine)
	theirs := testPod("theirs")
	theirs.Spec.NodeName = "tok-b"
	theirs = createPodAs(t, ns, theirs)
	uid := string(mine.UID)

	serve := func(body string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodPost, "/api/v1/namespaces/"+ns+"/serviceaccounts/default/token", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, req.WithContext(request.WithUser(req.Context(), nodeUser("tok-a"))))
		return rec
	}
	const forbidden = `serviceaccounts "default" is forbidden: `
	cases := []struct {
		name, body string
		wantCode   int
		want       string
	}{
		{"the API server's audience", tokenBody("mine", uid, "[]"), http.StatusCreated, ""},
		{"an audience its pod's volume uses", tokenBody("mine", uid, `["vault"]`), http.StatusCreated, ""},
		{"not bound", `{"apiVersion":"authentication.k8s.io/v1","kind":"TokenRequest","spec":{}}`,
			http.StatusForbidden, forbidden + "node requested token not bound to a pod"},
		{"bound without a uid", tokenBody("mine", "", "[]"), http.StatusForbidden, forbidden + "node requested token with a pod binding without a uid"},
		{"a stale uid", tokenBody("mine", "stale", "[]"), http.StatusForbidden,
			forbidden + "the UID in the bound object reference (stale) does not match the UID in record. The object might have been deleted and then recreated"},
		{"another node's pod", tokenBody("theirs", string(theirs.UID), "[]"), http.StatusForbidden,
			forbidden + "node requested token bound to a pod scheduled on a different node"},
		{"a missing pod", tokenBody("gone", "x", "[]"), http.StatusNotFound, `pods "gone" not found`},
		{"two audiences", tokenBody("mine", uid, `["vault","other"]`), http.StatusForbidden, forbidden + "node may only request 0 or 1 audiences"},
		{"an audience no volume uses", tokenBody("mine", uid, `["other"]`), http.StatusForbidden,
			forbidden + `audience "other" not found in pod spec volume, system:node:tok-a is not authorized to request tokens for this audience`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rec := serve(tc.body)
			if rec.Code != tc.wantCode {
				t.Fatalf("%d %s, want %d", rec.Code, rec.Body, tc.wantCode)
			}
			if tc.want != "" {
				if got := statusMessage(t, rec); got != tc.want {
					t.Errorf("message:\n got %s\nwant %s", got, tc.want)
				}
			}
		})
	}
}

// TestNodeAuthorizerServiceAccountVolume: the node reads the
// kube-root-ca.crt map its pods' API access volumes project, and asks for
// tokens of their service account, nothing more.
func TestNodeAuthorizerServiceAccountVolume(t *testing.T) {
	ns := testNamespace(t)
	pod := testPod("api-user")
	pod.Spec.NodeName = "vol-a"
	createPodAs(t, ns, pod)
	for _, name := range []string{"kube-root-ca.crt", "other"} {
		cm := &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"ca.crt": "pem"}}
		if _, err := client.CoreV1().ConfigMaps(ns).Create(ctxT(t), cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	base := "/api/v1/namespaces/" + ns
	for _, tc := range []struct {
		name         string
		node         string
		method, path string
		want         int
	}{
		{"its pod's root CA map", "vol-a", http.MethodGet, base + "/configmaps/kube-root-ca.crt", http.StatusOK},
		{"another map", "vol-a", http.MethodGet, base + "/configmaps/other", http.StatusForbidden},
		{"the root CA map without a pod there", "vol-b", http.MethodGet, base + "/configmaps/kube-root-ca.crt", http.StatusForbidden},
		{"list maps", "vol-a", http.MethodGet, base + "/configmaps", http.StatusForbidden},
		{"a token for another node's account", "vol-b", http.MethodPost, base + "/serviceaccounts/default/token", http.StatusForbidden},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := asUser(t, nodeUser(tc.node), tc.method, tc.path); got != tc.want {
				t.Errorf("%s %s as %s: %d, want %d", tc.method, tc.path, tc.node, got, tc.want)
			}
		})
	}
	// Its pod's account: authorized (the empty body is then bad input).
	if got := asUser(t, nodeUser("vol-a"), http.MethodPost, base+"/serviceaccounts/default/token"); got == http.StatusForbidden {
		t.Error("node may not request a token for its pod's service account")
	}
}
