package tokens_test

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/nodeagent/nodeagent/pkg/controlplane/apiserver/tokens"
	"github.com/nodeagent/nodeagent/pkg/controlplane/apiserver/tokens/tokenstest"
)

func testClaims(now time.Time, ttl time.Duration) *tokens.ServiceAccountClaims {
	return &tokens.ServiceAccountClaims{
		RegisteredClaims: jwt.RegisteredClaims{
			Subject:   "system:serviceaccount:ns:sa",
			Audience:  jwt.ClaimStrings{tokens.DefaultServiceAccountIssuer},
			IssuedAt:  jwt.NewNumericDate(now),
			NotBefore: jwt.NewNumericDate(now),
			ExpiresAt: jwt.NewNumericDate(now.Add(ttl)),
			ID:        "jti-1",
		},
		Kubernetes: tokens.KubernetesClaim{Namespace: "ns", ServiceAccount: tokens.ObjectRef{Name: "sa", UID: "uid-1"}},
	}
}

func TestTokenSignerVerify(t *testing.T) {
	s := tokenstest.NewSigner(t)
	now := time.Now()
	good, err := s.Sign(testClaims(now, time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	c, ours, err := s.Verify(good)
	if err != nil || !ours {
		t.Fatalf("Verify(good) = %v, %v", ours, err)
	}
	if c.Issuer != tokens.DefaultServiceAccountIssuer || c.Kubernetes.ServiceAccount.UID != "uid-1" || c.ID != "jti-1" {
		t.Errorf("claims = %+v", c)
	}

	expired, _ := s.Sign(testClaims(now.Add(-2*time.Hour), time.Hour))
	if _, ours, err := s.Verify(expired); !ours || err == nil || err.Error() != "service account token has expired" {
		t.Errorf("expired: ours=%v err=%v", ours, err)
	}
	future, _ := s.Sign(testClaims(now.Add(time.Hour), time.Hour))
	if _, ours, err := s.Verify(future); !ours || err == nil {
		t.Errorf("not yet valid: ours=%v err=%v", ours, err)
	}

	other := tokenstest.NewSigner(t) // same issuer, another key
	forged, _ := other.Sign(testClaims(now, time.Hour))
	if _, ours, err := s.Verify(forged); !ours || err == nil || !strings.Contains(err.Error(), "cryptographic primitive") {
		t.Errorf("wrong signature: ours=%v err=%v", ours, err)
	}
	parts := strings.Split(good, ".")
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	payload = []byte(strings.Replace(string(payload), "uid-1", "uid-2", 1))
	tampered := parts[0] + "." + base64.RawURLEncoding.EncodeToString(payload) + "." + parts[2]
	if _, ours, err := s.Verify(tampered); !ours || err == nil {
		t.Errorf("tampered token: ours=%v err=%v", ours, err)
	}

	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	foreign, _ := tokens.NewSigner(rsaKey, "https://elsewhere.example")
	elsewhere, _ := foreign.Sign(testClaims(now, time.Hour))
	for name, tok := range map[string]string{"other issuer": elsewhere, "garbage": "not-a-jwt", "static": "s3cret"} {
		if _, ours, err := s.Verify(tok); ours || err != nil {
			t.Errorf("%s: ours=%v err=%v, want not recognised", name, ours, err)
		}
	}

	bad := testClaims(now, time.Hour)
	bad.Subject = "system:serviceaccount:ns:other"
	mismatch, _ := s.Sign(bad)
	if _, _, err := s.Verify(mismatch); err == nil {
		t.Error("subject not matching the kubernetes.io claim verified")
	}
}

func TestCheckAudiences(t *testing.T) {
	if got, err := tokens.CheckAudiences([]string{"a", "b"}, []string{"b", "c"}); err != nil || !slices.Equal(got, []string{"b"}) {
		t.Errorf("tokens.CheckAudiences = %v, %v", got, err)
	}
	_, err := tokens.CheckAudiences([]string{"a"}, []string{"c"})
	if err == nil || err.Error() != `token audiences ["a"] is invalid for the target audiences ["c"]` {
		t.Errorf("err = %v", err)
	}
}
