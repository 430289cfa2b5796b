package nodeapi

import (
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"
)

// The identities and groups upstream's authenticators give.
const (
	UserAnonymous            = "system:anonymous"
	GroupUnauthenticated     = "system:unauthenticated"
	GroupAuthenticated       = "system:authenticated"
	authenticationCacheLimit = 4096
)

// UserInfo is an authenticated caller, as the API server's user.Info.
type UserInfo struct {
	Name   string
	UID    string
	Groups []string
	Extra  map[string][]string
}

// Authenticator identifies the caller of a request: ok is false when the
// request carries no credentials it understands, err when they are bad.
type Authenticator interface {
	AuthenticateRequest(r *http.Request) (user *UserInfo, ok bool, err error)
}

// AuthenticatorFunc adapts a function.
type AuthenticatorFunc func(r *http.Request) (*UserInfo, bool, error)

// AuthenticateRequest calls f.
func (f AuthenticatorFunc) AuthenticateRequest(r *http.Request) (*UserInfo, bool, error) {
	return f(r)
}

// AuthnConfig selects the kubelet's authenticators.
type AuthnConfig struct {
	// ClientCAs verifies client certificates (authentication.x509); nil
	// disables them.
	ClientCAs *x509.CertPool
	// TokenReviews checks bearer tokens (authentication.webhook); nil
	// disables them.
	TokenReviews TokenReviewer
	// CacheTTL is how long a token's review is reused (default 2m).
	CacheTTL time.Duration
	// Anonymous admits requests without credentials as system:anonymous.
	Anonymous bool
	// Now is the clock for certificate validity and caches (tests).
	Now func() time.Time
}

// NewAuthenticator assembles upstream's order: client certificate, then
// bearer token (the first that succeeds wins, and system:authenticated is
// added), then anonymous for requests that carried no credentials at all.
// Bad credentials are refused even when anonymous is enabled.
func NewAuthenticator(cfg AuthnConfig) Authenticator {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	var chain []Authenticator
	if cfg.ClientCAs != nil {
		chain = append(chain, &x509Authenticator{roots: cfg.ClientCAs, now: cfg.Now})
	}
	if cfg.TokenReviews != nil {
		chain = append(chain, newTokenAuthenticator(cfg.TokenReviews, cfg.CacheTTL, cfg.Now))
	}
	return AuthenticatorFunc(func(r *http.Request) (*UserInfo, bool, error) {
		user, ok, err := authenticateFirst(chain, r)
		switch {
		case ok:
			return withAuthenticatedGroup(user), true, nil
		case err == nil && cfg.Anonymous:
			return &UserInfo{Name: UserAnonymous, Groups: []string{GroupUnauthenticated}}, true, nil
		}
		return nil, false, err
	})
}

// authenticateFirst returns the first success; failures are joined when
// none succeeds.
func authenticateFirst(chain []Authenticator, r *http.Request) (*UserInfo, bool, error) {
	var errs []error
	for _, a := range chain {
		user, ok, err := a.AuthenticateRequest(r)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if ok {
			return user, true, nil
		}
	}
	return nil, false, errors.Join(errs...)
}

func withAuthenticatedGroup(u *UserInfo) *UserInfo {
	if slices.Contains(u.Groups, GroupAuthenticated) || slices.Contains(u.Groups, GroupUnauthenticated) {
		return u
	}
	cp := *u
	cp.Groups = append(slices.Clip(u.Groups), GroupAuthenticated)
	return &cp
}

// x509Authenticator verifies the TLS client certificate: the user is its
// CommonName, the groups its Organizations.
type x509Authenticator struct {
	roots *x509.CertPool
	now   func() time.Time
}

func (a *x509Authenticator) AuthenticateRequest(r *http.Request) (*UserInfo, bool, error) {
	if r.TLS == nil || len(r.TLS.PeerCertificates) == 0 {
		return nil, false, nil
	}
	leaf := r.TLS.PeerCertificates[0]
	opts := x509.VerifyOptions{
		Roots:         a.roots,
		Intermediates: x509.NewCertPool(),
		CurrentTime:   a.now(),
		KeyUsages:     []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	for _, c := range r.TLS.PeerCertificates[1:] {
		opts.Intermediates.AddCert(c)
	}
	if _, err := leaf.Verify(opts); err != nil {
		return nil, false, fmt.Errorf("verify client certificate %q: %w", leaf.Subject.CommonName, err)
	}
	if leaf.Subject.CommonName == "" {
		return nil, false, errors.New("the client certificate's common name is empty")
	}
	return &UserInfo{Name: leaf.Subject.CommonName, Groups: slices.Clone(leaf.Subject.Organization)}, true, nil
}
