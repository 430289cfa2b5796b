package server

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/nodeagent/nodeagent/pkg/controlplane/apiserver/tokens"
	"github.com/nodeagent/nodeagent/pkg/controlplane/apiserver/tokens/tokenstest"
)

// fakeLookup holds service account and pod UIDs by "ns/name".
type fakeLookup struct{ sas, pods map[string]string }

func (f *fakeLookup) LookupServiceAccount(_ context.Context, ns, name string) (string, error) {
	if uid, ok := f.sas[ns+"/"+name]; ok {
		return uid, nil
	}
	return "", apierrors.NewNotFound(schema.GroupResource{Resource: "serviceaccounts"}, name)
}

func (f *fakeLookup) LookupPod(_ context.Context, ns, name string) (string, error) {
	if uid, ok := f.pods[ns+"/"+name]; ok {
		return uid, nil
	}
	return "", apierrors.NewNotFound(schema.GroupResource{Resource: "pods"}, name)
}

type claimOpt func(*tokens.ServiceAccountClaims)

func signToken(t *testing.T, s *tokens.Signer, opts ...claimOpt) string {
	t.Helper()
	now := time.Now()
	c := &tokens.ServiceAccountClaims{
		RegisteredClaims: jwt.RegisteredClaims{
			Subject:   "system:serviceaccount:default:default",
			Audience:  jwt.ClaimStrings{tokens.DefaultServiceAccountIssuer},
			IssuedAt:  jwt.NewNumericDate(now),
			NotBefore: jwt.NewNumericDate(now),
			ExpiresAt: jwt.NewNumericDate(now.Add(time.Hour)),
			ID:        "jti",
		},
		Kubernetes: tokens.KubernetesClaim{Namespace: "default", ServiceAccount: tokens.ObjectRef{Name: "default", UID: "sa-uid"}},
	}
	for _, o := range opts {
		o(c)
	}
	tok, err := s.Sign(c)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func boundTo(pod, uid, node string) claimOpt {
	return func(c *tokens.ServiceAccountClaims) {
		c.Kubernetes.Pod = &tokens.ObjectRef{Name: pod, UID: uid}
		if node != "" {
			c.Kubernetes.Node = &tokens.ObjectRef{Name: node}
		}
	}
}

func TestServiceAccountTokenAuthentication(t *testing.T) {
	signer := tokenstest.NewSigner(t)
	lookup := &fakeLookup{sas: map[string]string{"default/default": "sa-uid"}, pods: map[string]string{"default/web": "pod-uid"}}
	auds := []string{tokens.DefaultServiceAccountIssuer}
	chain := &tokenAuthenticator{
		static:       tokenUsers{"s3cret": {Name: "alice", Groups: []string{"devs"}}},
		sa:           &saTokenAuthenticator{signer: signer, lookup: lookup, implicitAuds: auds},
		apiAudiences: auds,
	}
	ctx := t.Context()
	wantGroups := []string{"system:serviceaccounts", "system:serviceaccounts:default", "system:authenticated"}

	res, ok, err := chain.authenticateToken(ctx, signToken(t, signer), nil)
	if !ok || err != nil {
		t.Fatalf("valid token: ok=%v err=%v", ok, err)
	}
	if res.User.Name != "system:serviceaccount:default:default" || !slices.Equal(res.User.Groups, wantGroups) ||
		res.UID != "sa-uid" || !slices.Equal(res.Audiences, auds) || res.Extra[tokens.ExtraCredentialID][0] != "JTI=jti" {
		t.Errorf("result = %+v", res)
	}

	res, ok, err = chain.authenticateToken(ctx, signToken(t, signer, boundTo("web", "pod-uid", "node-a")), nil)
	if !ok || err != nil {
		t.Fatalf("bound token: ok=%v err=%v", ok, err)
	}
	if res.Extra[tokens.ExtraPodName][0] != "web" || res.Extra[tokens.ExtraPodUID][0] != "pod-uid" || res.Extra[tokens.ExtraNodeName][0] != "node-a" {
		t.Errorf("bound extra = %v", res.Extra)
	}

	// Audiences: a token for vault is not for the API server, but a review for vault accepts it.
	vault := signToken(t, signer, func(c *tokens.ServiceAccountClaims) { c.Audience = jwt.ClaimStrings{"vault"} })
	if res, ok, err := chain.authenticateToken(ctx, vault, []string{"vault"}); !ok || err != nil || !slices.Equal(res.Audiences, []string{"vault"}) {
		t.Errorf("vault token for vault: %+v ok=%v err=%v", res, ok, err)
	}

	other := tokenstest.NewSigner(t)
	rejected := map[string]struct {
		token string
		err   string
	}{
		"expired": {signToken(t, signer, func(c *tokens.ServiceAccountClaims) {
			c.ExpiresAt = jwt.NewNumericDate(time.Now().Add(-2 * time.Minute))
			c.IssuedAt = jwt.NewNumericDate(time.Now().Add(-time.Hour))
			c.NotBefore = c.IssuedAt
		}), "service account token has expired"},
		"wrong signature": {signToken(t, other), "error in cryptographic primitive"},
		"wrong audience":  {vault, `token audiences ["vault"] is invalid for the target audiences ["https://kubernetes.default.svc.cluster.local"]`},
		"deleted service account": {signToken(t, signer, func(c *tokens.ServiceAccountClaims) {
			c.Subject = "system:serviceaccount:default:gone"
			c.Kubernetes.ServiceAccount.Name = "gone"
		}), `serviceaccounts "gone" not found`},
		"recreated service account": {signToken(t, signer, func(c *tokens.ServiceAccountClaims) {
			c.Kubernetes.ServiceAccount.UID = "old-uid"
		}), "service account UID (sa-uid) does not match claim (old-uid)"},
		"deleted bound pod":   {signToken(t, signer, boundTo("gone", "x", "")), `pods "gone" not found`},
		"recreated bound pod": {signToken(t, signer, boundTo("web", "old-pod", "")), "pod UID (pod-uid) does not match claim (old-pod)"},
		"garbage":             {"garbage", "invalid bearer token"},
	}
	for name, tc := range rejected {
		res, ok, err := chain.authenticateToken(ctx, tc.token, nil)
		if ok || err == nil || !strings.Contains(err.Error(), tc.err) || res.User.Name != "" {
			t.Errorf("%s: ok=%v err=%v, want error containing %q", name, ok, err, tc.err)
		}
	}

	// The static token file is valid for the API server's audiences only.
	if res, ok, err := chain.authenticateToken(ctx, "s3cret", nil); !ok || err != nil || res.User.Name != "alice" ||
		!slices.Equal(res.User.Groups, []string{"devs", "system:authenticated"}) || !slices.Equal(res.Audiences, auds) {
		t.Errorf("static token: %+v ok=%v err=%v", res, ok, err)
	}
	if _, ok, _ := chain.authenticateToken(ctx, "s3cret", []string{"vault"}); ok {
		t.Error("static token accepted for another audience")
	}
	if g := chain.static["s3cret"].Groups; len(g) != 1 {
		t.Errorf("static user's groups modified: %v", g)
	}
}

func TestEnsureServiceAccountKey(t *testing.T) {
	dir := t.TempDir()
	log := slog.New(slog.NewTextHandler(t.Output(), nil))
	k1, err := ensureServiceAccountKey(dir, log)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := k1.(*ecdsa.PrivateKey); !ok {
		t.Fatalf("key type %T", k1)
	}
	info, err := os.Stat(filepath.Join(dir, saKeyFile))
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("sa.key: %v %v", info, err)
	}
	pub1, err := os.ReadFile(filepath.Join(dir, saPubFile))
	if err != nil || !bytes.Contains(pub1, []byte("PUBLIC KEY")) {
		t.Fatalf("sa.pub: %q %v", pub1, err)
	}
	// Written through temporary files renamed into place (atomicfile):
	// none is left behind.
	if entries, _ := os.ReadDir(dir); len(entries) != 2 {
		t.Errorf("PKI directory holds %v, want sa.key and sa.pub only", entries)
	}
	// Kept across starts; sa.pub is rewritten from the key when missing.
	if err := os.Remove(filepath.Join(dir, saPubFile)); err != nil {
		t.Fatal(err)
	}
	k2, err := ensureServiceAccountKey(dir, log)
	if err != nil {
		t.Fatal(err)
	}
	if !k1.(*ecdsa.PrivateKey).Equal(k2) {
		t.Error("service account key replaced on restart")
	}
	if pub2, _ := os.ReadFile(filepath.Join(dir, saPubFile)); !bytes.Equal(pub1, pub2) {
		t.Error("sa.pub differs after restart")
	}
	// A corrupt key is an error, not a silent replacement.
	if err := os.WriteFile(filepath.Join(dir, saKeyFile), []byte("junk"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ensureServiceAccountKey(dir, log); err == nil {
		t.Error("corrupt sa.key accepted")
	}
}
