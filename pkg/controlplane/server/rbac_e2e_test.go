package server

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/nodeagent/nodeagent/pkg/controlplane/apiserver/tokens"
)

// TestBootstrapPolicyGrantsTheDefaults runs the real control plane: once
// Ready, /readyz reports the rbac/bootstrap-roles hook done, and what
// upstream's default bindings grant reaches users through RBAC alone:
// system:monitoring reads /metrics, every authenticated user reviews
// itself (with its token's UID and extra), and nothing more.
func TestBootstrapPolicyGrantsTheDefaults(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, TokenFile), []byte("prom-token,prometheus,uid-prom,system:monitoring\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := Config{DataDir: dir, SecurePort: freePort(t), BindAddress: "127.0.0.1",
		EtcdClientPort: freePort(t), EtcdPeerPort: freePort(t)}
	r := start(t, cfg)
	defer r.stop(t)
	admin, host := adminClient(t, dir)
	if code, body := do(t, admin, host+"/readyz?verbose", ""); code != http.StatusOK || !strings.Contains(body, "[+]poststarthook/rbac/bootstrap-roles ok\n") {
		t.Errorf("/readyz?verbose = %d %q", code, body)
	}
	anon := anonClient(t, dir)
	if code, body := do(t, anon, host+"/metrics", "prom-token"); code != http.StatusOK {
		t.Errorf("system:monitoring GET /metrics = %d %.200s", code, body)
	}
	const refusal = `"message":"pods is forbidden: User \"prometheus\" cannot list resource \"pods\" in API group \"\" at the cluster scope"`
	if code, body := do(t, anon, host+"/api/v1/pods", "prom-token"); code != http.StatusForbidden || !strings.Contains(body, refusal) {
		t.Errorf("system:monitoring GET /api/v1/pods = %d %s", code, body)
	}

	cs := clientset(t, dir)
	tr, err := cs.CoreV1().ServiceAccounts("default").CreateToken(t.Context(), "default", &authnv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sa, err := cs.CoreV1().ServiceAccounts("default").Get(t.Context(), "default", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodPost, host+"/apis/authentication.k8s.io/v1/selfsubjectreviews",
		strings.NewReader(`{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+tr.Status.Token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := anon.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var review authnv1.SelfSubjectReview
	if err := json.NewDecoder(resp.Body).Decode(&review); err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("SelfSubjectReview as the service account = %d %v", resp.StatusCode, err)
	}
	info := review.Status.UserInfo
	if info.Username != "system:serviceaccount:default:default" || info.UID != string(sa.UID) ||
		len(info.Extra[tokens.ExtraCredentialID]) != 1 || !strings.HasPrefix(info.Extra[tokens.ExtraCredentialID][0], "JTI=") {
		t.Errorf("SelfSubjectReview user = %+v", info)
	}
}

// TestNodesReadEveryNodeThroughNodeProxier runs the real control plane:
// a node reads only its own Node by the node authorizer (upstream's
// refusal otherwise), and every Node and EndpointSlice through the
// nodeagent:node-proxier binding (system:node-proxier for system:nodes),
// which the service proxy and kubenet need; with the binding deleted, the
// same reads are refused.
func TestNodesReadEveryNodeThroughNodeProxier(t *testing.T) {
	dir := t.TempDir()
	cfg := Config{DataDir: dir, SecurePort: freePort(t), BindAddress: "127.0.0.1",
		EtcdClientPort: freePort(t), EtcdPeerPort: freePort(t)}
	r := start(t, cfg)
	defer r.stop(t)
	admin := clientset(t, dir)
	kubeconfig := filepath.Join(dir, "n1.conf")
	if err := WriteNodeKubeconfig(dir, "n1", cfg.LocalURL(), kubeconfig); err != nil {
		t.Fatal(err)
	}
	rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	node, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	reads := func() (nodesErr, slicesErr error) {
		_, nodesErr = node.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		_, slicesErr = node.DiscoveryV1().EndpointSlices("").List(ctx, metav1.ListOptions{})
		return nodesErr, slicesErr
	}
	if nErr, sErr := reads(); nErr != nil || sErr != nil {
		t.Fatalf("with the node-proxier binding: list nodes: %v; list endpointslices: %v", nErr, sErr)
	}
	if err := admin.RbacV1().ClusterRoleBindings().Delete(ctx, "nodeagent:node-proxier", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	var nErr, sErr error
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if nErr, sErr = reads(); apierrors.IsForbidden(nErr) && apierrors.IsForbidden(sErr) {
			break
		}
	}
	if !apierrors.IsForbidden(nErr) || !strings.Contains(nErr.Error(), "node 'n1' cannot read all nodes, only its own Node object") {
		t.Errorf("list nodes without the binding: %v; want forbidden with the node authorizer's reason", nErr)
	}
	if !apierrors.IsForbidden(sErr) {
		t.Errorf("list endpointslices without the binding: %v; want forbidden", sErr)
	}
	// Its own Node stays readable (the agent's node watch).
	sel := metav1.ListOptions{FieldSelector: "metadata.name=n1"}
	if _, err := node.CoreV1().Nodes().List(ctx, sel); err != nil {
		t.Errorf("list its own node: %v", err)
	}
}
