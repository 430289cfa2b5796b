package tokens

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/nodeagent/nodeagent/pkg/controlplane/apiserver/request"
)

// DefaultServiceAccountIssuer is kubeadm's --service-account-issuer; the
// API server's audiences default to it, as kube-apiserver's --api-audiences.
const DefaultServiceAccountIssuer = "https://kubernetes.default.svc.cluster.local"

// Service account user names and groups, as upstream.
const (
	ServiceAccountUserPrefix  = "system:serviceaccount:"
	ServiceAccountsGroup      = "system:serviceaccounts"
	serviceAccountGroupPrefix = "system:serviceaccounts:"
)

// Extra keys upstream puts on a service account token's user.
const (
	ExtraCredentialID = "authentication.kubernetes.io/credential-id"
	ExtraPodName      = "authentication.kubernetes.io/pod-name"
	ExtraPodUID       = "authentication.kubernetes.io/pod-uid"
	ExtraNodeName     = "authentication.kubernetes.io/node-name"
	ExtraNodeUID      = "authentication.kubernetes.io/node-uid"
)

// tokenLeeway is go-jose's default leeway, which upstream's validator uses
// for exp, nbf and iat.
const tokenLeeway = time.Minute

// ServiceAccountUser is the user a service account authenticates as.
func ServiceAccountUser(ns, name string) request.User {
	return request.User{Name: ServiceAccountUserPrefix + ns + ":" + name,
		Groups: []string{ServiceAccountsGroup, serviceAccountGroupPrefix + ns}}
}

// Result is what authenticating a bearer token found.
type Result struct {
	User      request.User
	UID       string
	Extra     map[string][]string
	Audiences []string // the audiences the token was valid for
}

// AuthenticatorFunc authenticates a bearer token for the given
// audiences, as the authentication in front of the API server does (the
// TokenReview API uses it). ok=false with a nil error means no
// authenticator recognised the token.
type AuthenticatorFunc func(ctx context.Context, token string, audiences []string) (res Result, ok bool, err error)

// ObjectRef names an object in the "kubernetes.io" claim.
type ObjectRef struct {
	Name string `json:"name,omitempty"`
	UID  string `json:"uid,omitempty"`
}

// KubernetesClaim is upstream's private "kubernetes.io" claim.
type KubernetesClaim struct {
	Namespace      string     `json:"namespace,omitempty"`
	ServiceAccount ObjectRef  `json:"serviceaccount"`
	Pod            *ObjectRef `json:"pod,omitempty"`
	Node           *ObjectRef `json:"node,omitempty"`
}

// ServiceAccountClaims are a bound service account token's claims.
type ServiceAccountClaims struct {
	jwt.RegisteredClaims
	Kubernetes KubernetesClaim `json:"kubernetes.io"`
}

// Signer issues and verifies service account tokens (JWTs signed with
// the service account key: ES256 for ECDSA P-256, RS256 for RSA).
type Signer struct {
	issuer string
	key    crypto.Signer
	method jwt.SigningMethod
	kid    string
	now    func() time.Time
}

// NewSigner returns a signer for issuer with key (ECDSA P-256 or RSA).
func NewSigner(key crypto.Signer, issuer string) (*Signer, error) {
	if issuer == "" {
		return nil, errors.New("service account issuer is required")
	}
	var method jwt.SigningMethod
	switch k := key.(type) {
	case *ecdsa.PrivateKey:
		if k.Curve != elliptic.P256() {
			return nil, fmt.Errorf("service account key: unsupported curve %s (want P-256)", k.Curve.Params().Name)
		}
		method = jwt.SigningMethodES256
	case *rsa.PrivateKey:
		method = jwt.SigningMethodRS256
	default:
		return nil, fmt.Errorf("service account key: unsupported type %T", key)
	}
	der, err := x509.MarshalPKIXPublicKey(key.Public())
	if err != nil {
		return nil, fmt.Errorf("service account key: %w", err)
	}
	sum := sha256.Sum256(der) // upstream's key ID
	return &Signer{issuer: issuer, key: key, method: method,
		kid: base64.RawURLEncoding.EncodeToString(sum[:]), now: time.Now}, nil
}

// Issuer is the iss claim of the tokens.
func (t *Signer) Issuer() string { return t.issuer }

// Now is the signer's clock: the time tokens are issued at.
func (t *Signer) Now() time.Time { return t.now() }

// Sign sets iss and signs the claims.
func (t *Signer) Sign(c *ServiceAccountClaims) (string, error) {
	c.Issuer = t.issuer
	tok := jwt.NewWithClaims(t.method, c)
	tok.Header["kid"] = t.kid
	return tok.SignedString(t.key)
}

// Verify checks a token's signature and times. recognised is false (with
// no error) for tokens that are not JWTs from this issuer, which other
// authenticators may know. Audiences and the objects named in the claims
// are for the caller to check.
func (t *Signer) Verify(token string) (c *ServiceAccountClaims, recognised bool, err error) {
	var unverified ServiceAccountClaims
	if _, _, err := jwt.NewParser().ParseUnverified(token, &unverified); err != nil || unverified.Issuer != t.issuer {
		return nil, false, nil
	}
	p := jwt.NewParser(
		jwt.WithValidMethods([]string{t.method.Alg()}),
		jwt.WithLeeway(tokenLeeway),
		jwt.WithIssuedAt(),
		jwt.WithExpirationRequired(),
		jwt.WithTimeFunc(t.now),
	)
	c = &ServiceAccountClaims{}
	_, err = p.ParseWithClaims(token, c, func(*jwt.Token) (any, error) { return t.key.Public(), nil })
	switch {
	case err == nil:
	case errors.Is(err, jwt.ErrTokenExpired):
		return nil, true, errors.New("service account token has expired")
	case errors.Is(err, jwt.ErrTokenNotValidYet):
		return nil, true, errors.New("service account token is not valid yet")
	case errors.Is(err, jwt.ErrTokenUsedBeforeIssued):
		return nil, true, errors.New("service account token is issued in the future")
	case errors.Is(err, jwt.ErrTokenSignatureInvalid), errors.Is(err, jwt.ErrTokenUnverifiable):
		return nil, true, errors.New("go-jose/go-jose: error in cryptographic primitive")
	default:
		return nil, true, err
	}
	k := c.Kubernetes
	if k.Namespace == "" || k.ServiceAccount.Name == "" || k.ServiceAccount.UID == "" {
		return nil, true, errors.New("service account token claims are incomplete")
	}
	if want := ServiceAccountUserPrefix + k.Namespace + ":" + k.ServiceAccount.Name; c.Subject != want {
		return nil, true, fmt.Errorf("service account token subject %q does not match %q", c.Subject, want)
	}
	return c, true, nil
}

// IntersectAudiences returns the audiences in both lists, in a's order.
func IntersectAudiences(a, b []string) []string {
	var out []string
	for _, x := range a {
		if slices.Contains(b, x) && !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	return out
}

// CheckAudiences returns the audiences a token is valid for among the
// target ones, or upstream's error when there are none.
func CheckAudiences(token, target []string) ([]string, error) {
	auds := IntersectAudiences(token, target)
	if len(auds) == 0 {
		return nil, fmt.Errorf("token audiences %q is invalid for the target audiences %q", token, target)
	}
	return auds, nil
}
