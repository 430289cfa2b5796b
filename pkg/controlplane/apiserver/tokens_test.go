package apiserver

import (
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/nodeagent/nodeagent/pkg/controlplane/apiserver/request"
	"github.com/nodeagent/nodeagent/pkg/controlplane/apiserver/tokens"
	"github.com/nodeagent/nodeagent/pkg/controlplane/apiserver/tokens/tokenstest"
)

// newTestSigner is a signer with a fresh key for the default issuer.
func newTestSigner(t *testing.T) *tokens.Signer { return tokenstest.NewSigner(t) }

// tokenServer is a second API server on the shared etcd, with a signer
// and a stub token authenticator.
func tokenServer(t *testing.T, signer *tokens.Signer, authn tokens.AuthenticatorFunc) *kubernetes.Clientset {
	t.Helper()
	s := newTokenServer(t, signer, authn)
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	return kubernetes.NewForConfigOrDie(&rest.Config{Host: srv.URL})
}

// newTokenServer runs the second API server until the test ends.
func newTokenServer(t *testing.T, signer *tokens.Signer, authn tokens.AuthenticatorFunc) *Server {
	t.Helper()
	s, err := New(Config{Etcd: testSrv.cfg.Etcd, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		TokenSigner: signer, TokenAuthenticator: authn})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = s.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	select {
	case <-s.Ready():
	case <-time.After(30 * time.Second):
		t.Fatal("token API server not ready")
	}
	return s
}

func TestTokenRequest(t *testing.T) {
	signer := newTestSigner(t)
	cs := tokenServer(t, signer, nil)
	ns := testNamespace(t)
	sa, err := client.CoreV1().ServiceAccounts(ns).Get(ctxT(t), "default", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}

	before := time.Now().Truncate(time.Second)
	tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctxT(t), "default", &authnv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if tr.Status.Token == "" || tr.Spec.ExpirationSeconds == nil || *tr.Spec.ExpirationSeconds != 3600 ||
		!slices.Equal(tr.Spec.Audiences, []string{tokens.DefaultServiceAccountIssuer}) || tr.Name != "default" || tr.Namespace != ns {
		t.Errorf("token request = %+v", tr)
	}
	if exp := tr.Status.ExpirationTimestamp.Time; exp.Before(before.Add(time.Hour)) || exp.After(time.Now().Add(time.Hour)) {
		t.Errorf("expirationTimestamp %v", exp)
	}
	c, _, err := signer.Verify(tr.Status.Token)
	if err != nil {
		t.Fatal(err)
	}
	if c.Subject != "system:serviceaccount:"+ns+":default" || c.Kubernetes.ServiceAccount.UID != string(sa.UID) ||
		c.Kubernetes.Namespace != ns || c.Kubernetes.Pod != nil || c.ID == "" || c.NotBefore == nil || c.IssuedAt == nil ||
		!slices.Equal([]string(c.Audience), []string{tokens.DefaultServiceAccountIssuer}) {
		t.Errorf("claims = %+v", c)
	}
	if got := c.ExpiresAt.Sub(c.IssuedAt.Time); got != time.Hour {
		t.Errorf("exp - iat = %v", got)
	}

	// Audiences and expiration as asked.
	secs := int64(600)
	tr, err = cs.CoreV1().ServiceAccounts(ns).CreateToken(ctxT(t), "default",
		&authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{Audiences: []string{"vault"}, ExpirationSeconds: &secs}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c, _, _ := signer.Verify(tr.Status.Token); c == nil || !slices.Equal([]string(c.Audience), []string{"vault"}) || c.ExpiresAt.Sub(c.IssuedAt.Time) != 10*time.Minute {
		t.Errorf("claims = %+v", c)
	}

	// Too short: upstream's validation error.
	secs = 599
	_, err = cs.CoreV1().ServiceAccounts(ns).CreateToken(ctxT(t), "default",
		&authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{ExpirationSeconds: &secs}}, metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.expirationSeconds: Invalid value: 599: may not specify a duration less than 10 minutes") {
		t.Errorf("599s: %v", err)
	}
	// Missing service account.
	if _, err = cs.CoreV1().ServiceAccounts(ns).CreateToken(ctxT(t), "nope", &authnv1.TokenRequest{}, metav1.CreateOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("missing service account: %v", err)
	}
	// Name in the body must match.
	if _, err = cs.CoreV1().ServiceAccounts(ns).CreateToken(ctxT(t), "default",
		&authnv1.TokenRequest{ObjectMeta: metav1.ObjectMeta{Name: "other"}}, metav1.CreateOptions{}); !apierrors.IsInvalid(err) {
		t.Errorf("other name: %v", err)
	}

	// Bound to a pod: its UID (and node name) are in the claims.
	pod := testPod("bound")
	pod.Spec.NodeName = "node-a"
	pod, err = client.CoreV1().Pods(ns).Create(ctxT(t), pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ref := &authnv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: "bound"}
	tr, err = cs.CoreV1().ServiceAccounts(ns).CreateToken(ctxT(t), "default",
		&authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{BoundObjectRef: ref}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c, _, _ = signer.Verify(tr.Status.Token)
	if c == nil || c.Kubernetes.Pod == nil || c.Kubernetes.Pod.UID != string(pod.UID) || c.Kubernetes.Pod.Name != "bound" ||
		c.Kubernetes.Node == nil || c.Kubernetes.Node.Name != "node-a" {
		t.Errorf("bound claims = %+v", c)
	}
	ref.UID = "wrong"
	if _, err = cs.CoreV1().ServiceAccounts(ns).CreateToken(ctxT(t), "default",
		&authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{BoundObjectRef: ref}}, metav1.CreateOptions{}); !apierrors.IsConflict(err) {
		t.Errorf("wrong bound UID: %v", err)
	}
	ref.UID, ref.Name = "", "missing"
	if _, err = cs.CoreV1().ServiceAccounts(ns).CreateToken(ctxT(t), "default",
		&authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{BoundObjectRef: ref}}, metav1.CreateOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("missing pod: %v", err)
	}
	ref.Kind, ref.Name = "ConfigMap", "x"
	if _, err = cs.CoreV1().ServiceAccounts(ns).CreateToken(ctxT(t), "default",
		&authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{BoundObjectRef: ref}}, metav1.CreateOptions{}); !apierrors.IsBadRequest(err) {
		t.Errorf("config map binding: %v", err)
	}
	if _, err := client.CoreV1().ServiceAccounts(ns).Create(ctxT(t), &v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "builder"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	other := testPod("other-sa")
	other.Spec.ServiceAccountName = "builder"
	if _, err = client.CoreV1().Pods(ns).Create(ctxT(t), other, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ref.Kind, ref.Name = "Pod", "other-sa"
	if _, err = cs.CoreV1().ServiceAccounts(ns).CreateToken(ctxT(t), "default",
		&authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{BoundObjectRef: ref}}, metav1.CreateOptions{}); !apierrors.IsBadRequest(err) {
		t.Errorf("pod of another service account: %v", err)
	}

	// Lookups for authentication.
	if uid, err := testSrv.LookupServiceAccount(ctxT(t), ns, "default"); err != nil || uid != string(sa.UID) {
		t.Errorf("LookupServiceAccount = %q, %v", uid, err)
	}
	if uid, err := testSrv.LookupPod(ctxT(t), ns, "bound"); err != nil || uid != string(pod.UID) {
		t.Errorf("LookupPod = %q, %v", uid, err)
	}
	if _, err := testSrv.LookupPod(ctxT(t), ns, "missing"); !apierrors.IsNotFound(err) {
		t.Errorf("LookupPod(missing) = %v", err)
	}
}

func TestTokenRequestWithoutSigner(t *testing.T) {
	ns := testNamespace(t)
	_, err := client.CoreV1().ServiceAccounts(ns).CreateToken(ctxT(t), "default", &authnv1.TokenRequest{}, metav1.CreateOptions{})
	if !apierrors.IsServiceUnavailable(err) {
		t.Errorf("CreateToken without a signer: %v", err)
	}
}

func TestTokenReview(t *testing.T) {
	var gotAuds []string
	cs := tokenServer(t, newTestSigner(t), func(_ context.Context, token string, auds []string) (tokens.Result, bool, error) {
		gotAuds = auds
		switch token {
		case "good":
			return tokens.Result{User: request.User{Name: "alice", Groups: []string{"devs", "system:authenticated"}}, UID: "1",
				Extra: map[string][]string{"k": {"v"}}, Audiences: auds}, true, nil
		case "wrong-auds":
			return tokens.Result{User: request.User{Name: "alice"}, Audiences: []string{"elsewhere"}}, true, nil
		}
		return tokens.Result{}, false, errorString("invalid bearer token")
	})
	review := func(token string, auds ...string) (*authnv1.TokenReview, error) {
		return cs.AuthenticationV1().TokenReviews().Create(ctxT(t),
			&authnv1.TokenReview{Spec: authnv1.TokenReviewSpec{Token: token, Audiences: auds}}, metav1.CreateOptions{})
	}
	tr, err := review("good")
	if err != nil {
		t.Fatal(err)
	}
	st := tr.Status
	if !st.Authenticated || st.Error != "" || st.User.Username != "alice" || st.User.UID != "1" ||
		!slices.Equal(st.User.Groups, []string{"devs", "system:authenticated"}) || st.User.Extra["k"][0] != "v" ||
		!slices.Equal(st.Audiences, []string{tokens.DefaultServiceAccountIssuer}) || !slices.Equal(gotAuds, []string{tokens.DefaultServiceAccountIssuer}) {
		t.Errorf("status = %+v (audiences asked %v)", st, gotAuds)
	}
	if tr, err = review("good", "vault"); err != nil || !slices.Equal(tr.Status.Audiences, []string{"vault"}) {
		t.Errorf("review for vault = %+v, %v", tr, err)
	}
	if tr, err = review("bad"); err != nil || tr.Status.Authenticated || tr.Status.Error != "invalid bearer token" || tr.Status.User.Username != "" {
		t.Errorf("bad token = %+v, %v", tr, err)
	}
	if _, err = review("wrong-auds"); !apierrors.IsInternalError(err) {
		t.Errorf("authenticator ignoring audiences: %v", err)
	}
}

// The handler-only server (no authenticator) reviews no token.
func TestTokenReviewWithoutAuthenticator(t *testing.T) {
	tr, err := client.AuthenticationV1().TokenReviews().Create(ctxT(t),
		&authnv1.TokenReview{Spec: authnv1.TokenReviewSpec{Token: "x"}}, metav1.CreateOptions{})
	if err != nil || tr.Status.Authenticated {
		t.Errorf("review = %+v, %v", tr, err)
	}
}
