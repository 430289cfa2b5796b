package server

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	authnv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
