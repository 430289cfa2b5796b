package server

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/nodeagent/nodeagent/pkg/atomicfile"
	"github.com/nodeagent/nodeagent/pkg/controlplane/apiserver/tokens"
	"github.com/nodeagent/nodeagent/pkg/controlplane/pki"
)

// The service account signing key in the PKI directory, as kubeadm's
// (kube-apiserver's --service-account-signing-key-file and
// --service-account-key-file).
const (
	saKeyFile = "sa.key"
	saPubFile = "sa.pub"
)

// ensureServiceAccountKey loads dir/sa.key, or creates an ECDSA P-256 key
// (and dir/sa.pub) on first start. An existing key is kept: replacing it
// would invalidate every token issued; an unreadable one is an error.
func ensureServiceAccountKey(dir string, log *slog.Logger) (crypto.Signer, error) {
	keyPath, pubPath := filepath.Join(dir, saKeyFile), filepath.Join(dir, saPubFile)
	data, err := os.ReadFile(keyPath)
	var key crypto.Signer
	switch {
	case err == nil:
		if key, err = pki.ParseKey(data); err != nil {
			return nil, fmt.Errorf("%s: %w", keyPath, err)
		}
	case errors.Is(err, fs.ErrNotExist):
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return nil, err
		}
		der, err := x509.MarshalECPrivateKey(k)
		if err != nil {
			return nil, err
		}
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, err
		}
		if err := atomicfile.Write(keyPath, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), 0o600); err != nil {
			return nil, err
		}
		log.Info("created service account signing key", "path", keyPath)
		key = k
	default:
		return nil, err
	}
	pubDER, err := x509.MarshalPKIXPublicKey(key.Public())
	if err != nil {
		return nil, err
	}
	pubPEM := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER})
	if cur, err := os.ReadFile(pubPath); err != nil || string(cur) != string(pubPEM) {
		if err := atomicfile.Write(pubPath, pubPEM, 0o644); err != nil {
			return nil, err
		}
	}
	return key, nil
}

// serviceAccountLookup is what token authentication reads from the API
// (implemented by *apiserver.Server).
type serviceAccountLookup interface {
	LookupServiceAccount(ctx context.Context, ns, name string) (uid string, err error)
	LookupPod(ctx context.Context, ns, name string) (uid string, err error)
}

// saTokenAuthenticator authenticates bound service account tokens, as
// upstream's JWT token authenticator with its service account validator.
type saTokenAuthenticator struct {
	signer *tokens.Signer
	lookup serviceAccountLookup
	// implicitAuds are the API server's audiences: the default target, and
	// what a token without audiences is for.
	implicitAuds []string
}

// authenticate checks a token: signed by our key for our issuer, in time,
// for one of the target audiences (nil: the API server's), and naming a
// service account (and pod) that still exist with the same UIDs.
func (a *saTokenAuthenticator) authenticate(ctx context.Context, token string, target []string) (tokens.Result, bool, error) {
	c, ours, err := a.signer.Verify(token)
	if !ours {
		return tokens.Result{}, false, nil
	}
	if err != nil {
		return tokens.Result{}, false, err
	}
	tokenAuds := []string(c.Audience)
	if len(tokenAuds) == 0 {
		tokenAuds = a.implicitAuds
	}
	if target == nil {
		target = a.implicitAuds
	}
	auds, err := tokens.CheckAudiences(tokenAuds, target)
	if err != nil {
		return tokens.Result{}, false, err
	}
	k := c.Kubernetes
	uid, err := a.lookup.LookupServiceAccount(ctx, k.Namespace, k.ServiceAccount.Name)
	if err != nil {
		return tokens.Result{}, false, err
	}
	if uid != k.ServiceAccount.UID {
		return tokens.Result{}, false, fmt.Errorf("service account UID (%s) does not match claim (%s)", uid, k.ServiceAccount.UID)
	}
	extra := map[string][]string{}
	if c.ID != "" {
		extra[tokens.ExtraCredentialID] = []string{"JTI=" + c.ID}
	}
	if p := k.Pod; p != nil {
		podUID, err := a.lookup.LookupPod(ctx, k.Namespace, p.Name)
		if err != nil {
			return tokens.Result{}, false, err
		}
		if podUID != p.UID {
			return tokens.Result{}, false, fmt.Errorf("pod UID (%s) does not match claim (%s)", podUID, p.UID)
		}
		extra[tokens.ExtraPodName] = []string{p.Name}
		extra[tokens.ExtraPodUID] = []string{p.UID}
	}
	if n := k.Node; n != nil {
		extra[tokens.ExtraNodeName] = []string{n.Name}
		if n.UID != "" {
			extra[tokens.ExtraNodeUID] = []string{n.UID}
		}
	}
	return tokens.Result{
		User:      tokens.ServiceAccountUser(k.Namespace, k.ServiceAccount.Name),
		UID:       uid,
		Extra:     extra,
		Audiences: auds,
	}, true, nil
}
