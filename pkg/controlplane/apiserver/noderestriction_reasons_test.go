package apiserver

import (
	"net/http"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestNodeAuthorizerRefusalMessages: a node asking for secrets, config
// maps, claims, volumes and tokens its pods do not reference is refused
// with upstream's Forbidden message and the node authorizer's reason.
func TestNodeAuthorizerRefusalMessages(t *testing.T) {
	ns := testNamespace(t)
	mine := testPod("mine")
	mine.Spec.NodeName = "node-a"
	mine.Spec.Volumes = []v1.Volume{{Name: "s", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "used"}}}}
	if _, err := client.CoreV1().Pods(ns).Create(ctxT(t), mine, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"used", "unused"} {
		if _, err := client.CoreV1().Secrets(ns).Create(ctxT(t), &v1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := client.CoreV1().ConfigMaps(ns).Create(ctxT(t), &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoreV1().PersistentVolumeClaims(ns).Create(ctxT(t), testClaim("data", ""), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	node := nodeUser("node-a")
	base := "/api/v1/namespaces/" + ns
	const none = ": no relationship found between node 'node-a' and this object"
	user := `User "system:node:node-a" `
	runRestrictionCases(t, node, []restrictionCase{
		{name: "its pod's secret", method: http.MethodGet, path: base + "/secrets/used", wantCode: http.StatusOK},
		{name: "another secret", method: http.MethodGet, path: base + "/secrets/unused", wantCode: http.StatusForbidden,
			wantMessage: `secrets "unused" is forbidden: ` + user + `cannot get resource "secrets" in API group "" in the namespace "` + ns + `"` + none},
		{name: "a watch of another secret", method: http.MethodGet, path: base + "/secrets?watch=true&fieldSelector=metadata.name%3Dunused", wantCode: http.StatusForbidden,
			wantMessage: `secrets is forbidden: ` + user + `cannot watch resource "secrets" in API group "" in the namespace "` + ns + `"` + none},
		{name: "every secret", method: http.MethodGet, path: base + "/secrets", wantCode: http.StatusForbidden,
			wantMessage: `secrets is forbidden: ` + user + `cannot list resource "secrets" in API group "" in the namespace "` + ns + `": No Object name found`},
		{name: "a secret's deletion", method: http.MethodDelete, path: base + "/secrets/used", wantCode: http.StatusForbidden,
			wantMessage: `secrets "used" is forbidden: ` + user + `cannot delete resource "secrets" in API group "" in the namespace "` + ns + `": can only read resources of this type`},
		{name: "an unreferenced config map", method: http.MethodGet, path: base + "/configmaps/settings", wantCode: http.StatusForbidden,
			wantMessage: `configmaps "settings" is forbidden: ` + user + `cannot get resource "configmaps" in API group "" in the namespace "` + ns + `"` + none},
		{name: "an unreferenced claim", method: http.MethodGet, path: base + "/persistentvolumeclaims/data", wantCode: http.StatusForbidden,
			wantMessage: `persistentvolumeclaims "data" is forbidden: ` + user + `cannot get resource "persistentvolumeclaims" in API group "" in the namespace "` + ns + `"` + none},
		{name: "every volume", method: http.MethodGet, path: "/api/v1/persistentvolumes", wantCode: http.StatusForbidden,
			wantMessage: `persistentvolumes is forbidden: ` + user + `cannot list resource "persistentvolumes" in API group "" at the cluster scope: can only get individual resources of this type`},
		{name: "an unrelated volume", method: http.MethodGet, path: "/api/v1/persistentvolumes/pv-x", wantCode: http.StatusForbidden,
			wantMessage: `persistentvolumes "pv-x" is forbidden: ` + user + `cannot get resource "persistentvolumes" in API group "" at the cluster scope` + none},
		{name: "a token of another service account", method: http.MethodPost, path: base + "/serviceaccounts/builder/token", body: `{}`, wantCode: http.StatusForbidden,
			wantMessage: `serviceaccounts "builder" is forbidden: ` + user + `cannot create resource "serviceaccounts/token" in API group "" in the namespace "` + ns + `"` + none},
		{name: "a service account itself", method: http.MethodGet, path: base + "/serviceaccounts/default", wantCode: http.StatusForbidden,
			wantMessage: `serviceaccounts "default" is forbidden: ` + user + `cannot get resource "serviceaccounts" in API group "" in the namespace "` + ns + `": can only create tokens for individual service accounts`},
	})
}
