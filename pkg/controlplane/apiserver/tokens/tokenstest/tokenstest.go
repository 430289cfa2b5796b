package tokenstest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"testing"

	"github.com/nodeagent/nodeagent/pkg/controlplane/apiserver/tokens"
)

// NewSigner is a service account token signer with a fresh P-256 key,
// for the default issuer.
func NewSigner(t testing.TB) *tokens.Signer {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	s, err := tokens.NewSigner(key, tokens.DefaultServiceAccountIssuer)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
