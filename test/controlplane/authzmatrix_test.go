package controlplane_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/nodeagent/nodeagent/pkg/controlplane/apiserver/tokens"
	"github.com/nodeagent/nodeagent/pkg/controlplane/pki"
)

// matrixRow is one identity asking for one thing, and upstream's answer.
type matrixRow struct {
	who, what string
	client    kubernetes.Interface
	path      string
	code      int
	message   string // the Status message of a refusal
	poll      bool   // the answer changes once the watch cache has seen a write
}

// restConfig is the shared server without credentials.
func restConfig(t *testing.T) *rest.Config {
	url, ca := serverAndCA(t)
	return &rest.Config{Host: url, TLSClientConfig: rest.TLSClientConfig{CAData: ca}}
}

func withToken(t *testing.T, token string) kubernetes.Interface {
	c := restConfig(t)
	c.BearerToken = token
	return kubernetes.NewForConfigOrDie(c)
}

// expiredToken signs a token for the service account with the server's
// key that expired an hour ago (TokenRequest's shortest expiry, ten
// minutes, cannot be waited out in a test).
func expiredToken(t *testing.T, sa *corev1.ServiceAccount) string {
	t.Helper()
	pem, err := os.ReadFile(filepath.Join(shared.cfg.DataDir, "pki", "sa.key"))
	if err != nil {
		t.Fatal(err)
	}
	key, err := pki.ParseKey(pem)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := tokens.NewSigner(key, tokens.DefaultServiceAccountIssuer)
	if err != nil {
		t.Fatal(err)
	}
	issued := time.Now().Add(-2 * time.Hour)
	token, err := signer.Sign(tokens.NewClaims(sa, []string{tokens.DefaultServiceAccountIssuer}, issued, time.Hour, "e2e-expired"))
	if err != nil {
		t.Fatal(err)
	}
	return token
}

// ask makes the row's GET and returns the HTTP code and the Status
// message.
func (r matrixRow) ask(ctx context.Context) (int, string) {
	var code int
	u, err := url.Parse(r.path)
	if err != nil {
		return 0, err.Error()
	}
	req := r.client.CoreV1().RESTClient().Get().AbsPath(u.Path)
	for k, vs := range u.Query() {
		for _, v := range vs {
			req = req.Param(k, v)
		}
	}
	err = req.Do(ctx).StatusCode(&code).Error()
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return code, status.Status().Message
	}
	if err != nil {
		return code, err.Error()
	}
	return code, ""
}

// TestAuthorizationMatrix: who may do what against the real server
// (issue 16's matrix), with upstream's codes and refusals.
func TestAuthorizationMatrix(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	admin := clientset(t, adminConfig)
	const nodeA, nodeB = "e2e-matrix-a", "e2e-matrix-b"
	for _, n := range []string{nodeA, nodeB} {
		if _, err := admin.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := admin.CoordinationV1().Leases(corev1.NamespaceNodeLease).Create(ctx,
			&coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: n}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = admin.CoordinationV1().Leases(corev1.NamespaceNodeLease).Delete(ctx, n, metav1.DeleteOptions{})
			_ = admin.CoreV1().Nodes().Delete(ctx, n, metav1.DeleteOptions{})
		})
	}
	nodeCS := clientset(t, nodeKubeconfig(t, nodeA))
	lone := mustServiceAccount(t, admin, ns, "lone")
	bound := mustServiceAccount(t, admin, ns, "bound")
	loneCS := withToken(t, mintToken(t, admin, lone))
	boundKubeconfig := tokenKubeconfigFor(t, ns, "bound", mintToken(t, admin, bound))
	boundCS := clientset(t, boundKubeconfig)
	expiredCS := withToken(t, expiredToken(t, lone))
	anonymous := kubernetes.NewForConfigOrDie(restConfig(t))

	if _, err := admin.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "pod-reader"},
		Rules: []rbacv1.PolicyRule{{Verbs: []string{"get", "list", "watch"}, APIGroups: []string{""}, Resources: []string{"pods"}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "read-pods"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "pod-reader"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "bound", Namespace: ns}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	pods := "/api/v1/namespaces/" + ns + "/pods"
	lease := func(n string) string { return "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/" + n }
	nodePods := func(n string) string { return "/api/v1/pods?fieldSelector=spec.nodeName%3D" + n }
	saUser := func(name string) string { return "system:serviceaccount:" + ns + ":" + name }
	cannotListPods := func(user, where string) string {
		return `pods is forbidden: User "` + user + `" cannot list resource "pods" in API group "" ` + where
	}
	inNS := func(n string) string { return `in the namespace "` + n + `"` }
	rows := []matrixRow{
		{"anonymous", "list pods", anonymous, pods, http.StatusUnauthorized, "Unauthorized", false},
		{"node A", "get its node", nodeCS, "/api/v1/nodes/" + nodeA, http.StatusOK, "", false},
		{"node A", "get its lease", nodeCS, lease(nodeA), http.StatusOK, "", false},
		{"node A", "list its pods", nodeCS, nodePods(nodeA), http.StatusOK, "", false},
		{"node A", "get node B's status", nodeCS, "/api/v1/nodes/" + nodeB + "/status", http.StatusForbidden,
			`nodes "` + nodeB + `" is forbidden: User "system:node:` + nodeA + `" cannot get resource "nodes/status" in API group "" at the cluster scope`, false},
		{"node A", "get node B's lease", nodeCS, lease(nodeB), http.StatusForbidden,
			`leases.coordination.k8s.io "` + nodeB + `" is forbidden: User "system:node:` + nodeA + `" cannot get resource "leases" in API group "coordination.k8s.io" in the namespace "kube-node-lease": ` +
				"can only access node lease with the same name as the requesting node", false},
		{"node A", "list node B's pods", nodeCS, nodePods(nodeB), http.StatusForbidden,
			cannotListPods("system:node:"+nodeA, "at the cluster scope") + ": can only list/watch pods with spec.nodeName field selector", false},
		// Every Node through nodeagent:node-proxier (system:node-proxier for
		// system:nodes: the service proxy's and kubenet's reads).
		{"node A", "get node B", nodeCS, "/api/v1/nodes/" + nodeB, http.StatusOK, "", false},
		{"node A", "list namespaces", nodeCS, "/api/v1/namespaces", http.StatusForbidden,
			`namespaces is forbidden: User "system:node:` + nodeA + `" cannot list resource "namespaces" in API group "" at the cluster scope`, false},
		{"service account, no binding", "list pods in its namespace", loneCS, pods, http.StatusForbidden, cannotListPods(saUser("lone"), inNS(ns)), false},
		{"service account, RoleBinding", "list pods in its namespace", boundCS, pods, http.StatusOK, "", true},
		{"service account, RoleBinding", "list pods in default", boundCS, "/api/v1/namespaces/default/pods", http.StatusForbidden,
			cannotListPods(saUser("bound"), inNS("default")), false},
		{"expired token", "list pods", expiredCS, pods, http.StatusUnauthorized, "Unauthorized", false},
		{"system:masters", "list pods", admin, pods, http.StatusOK, "", false},
	}
	var table strings.Builder
	table.WriteString("| who | asks | HTTP | message |\n|---|---|---|---|\n")
	check := func(r matrixRow) {
		t.Helper()
		code, msg := r.ask(ctx)
		for deadline := time.Now().Add(60 * time.Second); r.poll && (code != r.code || msg != r.message) && time.Now().Before(deadline); {
			time.Sleep(250 * time.Millisecond)
			code, msg = r.ask(ctx)
		}
		fmt.Fprintf(&table, "| %s | %s | %d | %s |\n", r.who, r.what, code, msg)
		if code != r.code || msg != r.message {
			t.Errorf("%s, %s: %d %q\nwant %d %q", r.who, r.what, code, msg, r.code, r.message)
		}
	}
	for _, r := range rows {
		check(r)
	}

	// kubectl sees the same: the refusal as upstream prints it.
	_, stderr, err := kubectlWith(t, boundKubeconfig, "-n", "default", "get", "pods")
	if want := "Error from server (Forbidden): " + cannotListPods(saUser("bound"), inNS("default")) + "\n"; err == nil || stderr != want {
		t.Errorf("kubectl get pods in default as the bound service account: err=%v stderr=%q want %q", err, stderr, want)
	}
	if out, _, _ := kubectlWith(t, boundKubeconfig, "auth", "can-i", "list", "pods"); out != "yes\n" {
		t.Errorf("kubectl auth can-i list pods as the bound service account: %q", out)
	}

	// Revoked: refused again once the cache has seen the deletion.
	if err := admin.RbacV1().RoleBindings(ns).Delete(ctx, "read-pods", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	check(matrixRow{"service account, binding deleted", "list pods in its namespace", boundCS, pods, http.StatusForbidden,
		cannotListPods(saUser("bound"), inNS(ns)), true})
	if out, _, _ := kubectlWith(t, boundKubeconfig, "auth", "can-i", "list", "pods"); out != "no\n" {
		t.Errorf("kubectl auth can-i list pods once revoked: %q", out)
	}
	t.Log("authorization matrix:\n" + table.String())
}

func mustServiceAccount(t *testing.T, c kubernetes.Interface, ns, name string) *corev1.ServiceAccount {
	t.Helper()
	sa, err := c.CoreV1().ServiceAccounts(ns).Create(context.Background(), &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return sa
}

// mintToken is a TokenRequest for the service account.
func mintToken(t *testing.T, c kubernetes.Interface, sa *corev1.ServiceAccount) string {
	t.Helper()
	tr, err := c.CoreV1().ServiceAccounts(sa.Namespace).CreateToken(context.Background(), sa.Name, &authnv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return tr.Status.Token
}
