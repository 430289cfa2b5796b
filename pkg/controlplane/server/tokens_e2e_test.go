package server

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	authnv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// TestServiceAccountTokens runs the real control plane: a token requested
// for default/default authenticates as the service account, TokenReview
// agrees, and a garbage token is refused.
func TestServiceAccountTokens(t *testing.T) {
	dir := t.TempDir()
	cfg := Config{
		DataDir:        dir,
		SecurePort:     freePort(t),
		BindAddress:    "127.0.0.1",
		EtcdClientPort: freePort(t),
		EtcdPeerPort:   freePort(t),
	}
	r := start(t, cfg)
	defer r.stop(t)
	admin := clientset(t, dir)
	ctx := t.Context()

	key1, err := os.ReadFile(filepath.Join(dir, "pki", saKeyFile))
	if err != nil {
		t.Fatalf("sa.key: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "pki", saPubFile)); err != nil {
		t.Fatalf("sa.pub: %v", err)
	}

	tr, err := admin.CoreV1().ServiceAccounts("default").CreateToken(ctx, "default", &authnv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("CreateToken: %v", err)
	}
	token := tr.Status.Token
	if token == "" || tr.Status.ExpirationTimestamp.IsZero() {
		t.Fatalf("token request status = %+v", tr.Status)
	}

	// As a bearer token: authenticated as the service account, which is no
	// admin, so the authorizer names it in its 403.
	rc, err := clientcmd.BuildConfigFromFlags("", filepath.Join(dir, KubeconfigFile))
	if err != nil {
		t.Fatal(err)
	}
	saCfg := rest.AnonymousClientConfig(rc)
	saCfg.BearerToken = token
	saClient, err := kubernetes.NewForConfig(saCfg)
	if err != nil {
		t.Fatal(err)
	}
	_, err = saClient.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
	const user = "system:serviceaccount:default:default"
	if err == nil || !strings.Contains(err.Error(), `User "`+user+`" cannot list resource "pods"`) {
		t.Errorf("list pods with the token: %v, want a 403 naming %s", err, user)
	}
	anon := anonClient(t, dir)
	host := rc.Host
	if code, body := do(t, anon, host+"/api/v1/namespaces/default/pods", token); code != 403 || !strings.Contains(body, user) {
		t.Errorf("GET pods with the token = %d %s", code, body)
	}
	if code, _ := do(t, anon, host+"/api/v1/namespaces/default/pods", "garbage"); code != 401 {
		t.Errorf("garbage token = %d, want 401", code)
	}

	// A service account may not review tokens (upstream: only with a
	// binding to system:auth-delegator, which nodeagent cannot make yet).
	_, err = saClient.AuthenticationV1().TokenReviews().Create(ctx,
		&authnv1.TokenReview{Spec: authnv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
	const refused = `tokenreviews.authentication.k8s.io is forbidden: User "` + user +
		`" cannot create resource "tokenreviews" in API group "authentication.k8s.io" at the cluster scope`
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), refused) {
		t.Errorf("TokenReview by the service account: %v, want 403 %q", err, refused)
	}

	// TokenReview agrees (asked by the admin).
	for name, cs := range map[string]*kubernetes.Clientset{"admin": admin} {
		rev, err := cs.AuthenticationV1().TokenReviews().Create(ctx,
			&authnv1.TokenReview{Spec: authnv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("%s: TokenReview: %v", name, err)
		}
		st := rev.Status
		wantGroups := []string{"system:serviceaccounts", "system:serviceaccounts:default", "system:authenticated"}
		if !st.Authenticated || st.User.Username != user || !slices.Equal(st.User.Groups, wantGroups) || st.User.UID == "" ||
			!slices.Equal(st.Audiences, []string{"https://kubernetes.default.svc.cluster.local"}) || st.Error != "" {
			t.Errorf("%s: TokenReview status = %+v", name, st)
		}
	}
	rev, err := admin.AuthenticationV1().TokenReviews().Create(ctx,
		&authnv1.TokenReview{Spec: authnv1.TokenReviewSpec{Token: "garbage"}}, metav1.CreateOptions{})
	if err != nil || rev.Status.Authenticated || rev.Status.Error == "" {
		t.Errorf("garbage TokenReview = %+v, %v", rev, err)
	}
	rev, err = admin.AuthenticationV1().TokenReviews().Create(ctx,
		&authnv1.TokenReview{Spec: authnv1.TokenReviewSpec{Token: token, Audiences: []string{"vault"}}}, metav1.CreateOptions{})
	if err != nil || rev.Status.Authenticated || !strings.Contains(rev.Status.Error, "invalid for the target audiences") {
		t.Errorf("TokenReview for another audience = %+v, %v", rev.Status, err)
	}

	// Deleting the service account invalidates its tokens.
	if err := admin.CoreV1().ServiceAccounts("default").Delete(ctx, "default", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if code, _ := do(t, anon, host+"/api/v1/namespaces/default/pods", token); code != 401 {
		t.Errorf("token of a deleted service account = %d, want 401", code)
	}

	if key2, _ := os.ReadFile(filepath.Join(dir, "pki", saKeyFile)); string(key1) != string(key2) {
		t.Error("sa.key changed while running")
	}
}
