package server

import (
	"context"
	"crypto/subtle"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/nodeagent/nodeagent/pkg/controlplane/apiserver/request"
	"github.com/nodeagent/nodeagent/pkg/controlplane/apiserver/tokens"
)

// Upstream's names (k8s.io/cluster-bootstrap/token/api).
const (
	bootstrapTokenSecretPrefix   = "bootstrap-token-"
	bootstrapTokenSecretType     = v1.SecretType("bootstrap.kubernetes.io/token")
	bootstrapTokenIDKey          = "token-id"
	bootstrapTokenSecretKey      = "token-secret"
	bootstrapTokenExpirationKey  = "expiration"
	bootstrapTokenUsageAuthKey   = "usage-bootstrap-authentication"
	bootstrapTokenUsageSignKey   = "usage-bootstrap-signing"
	bootstrapTokenDescriptionKey = "description"
	bootstrapTokenExtraGroupsKey = "auth-extra-groups"
	bootstrapUserPrefix          = "system:bootstrap:"
	// BootstrapGroup is every bootstrap token's group.
	BootstrapGroup = "system:bootstrappers"
)

// The shapes upstream accepts (k8s.io/cluster-bootstrap/token/api): a
// token is <id>.<secret>, 6 and 16 characters of [a-z0-9]; an extra group
// is under system:bootstrappers:.
var (
	bootstrapTokenRE = regexp.MustCompile(`^([a-z0-9]{6})\.([a-z0-9]{16})$`)
	bootstrapGroupRE = regexp.MustCompile(`^system:bootstrappers:[a-z0-9:-]{0,255}[a-z0-9]$`)
)

// secretLookup reads a secret (implemented by *apiserver.Server).
type secretLookup interface {
	LookupSecret(ctx context.Context, ns, name string) (*v1.Secret, error)
}

// bootstrapTokenAuthenticator authenticates bootstrap tokens as
// kube-apiserver's --enable-bootstrap-token-auth
// (plugin/pkg/auth/authenticator/token/bootstrap): the token <id>.<secret>
// names the secret bootstrap-token-<id> in kube-system, of type
// bootstrap.kubernetes.io/token, whose token-secret matches (compared in
// constant time), whose expiration has not passed and whose
// usage-bootstrap-authentication is "true". The user is
// system:bootstrap:<id> in system:bootstrappers and the secret's
// auth-extra-groups.
type bootstrapTokenAuthenticator struct {
	lookup secretLookup
	now    func() time.Time
	log    *slog.Logger
}

// authenticate reports ok=false with a nil error for a token that is not
// a bootstrap token's shape or names no usable secret, as upstream (the
// next authenticator may know it).
func (a *bootstrapTokenAuthenticator) authenticate(ctx context.Context, token string) (tokens.Result, bool, error) {
	m := bootstrapTokenRE.FindStringSubmatch(token)
	if m == nil {
		return tokens.Result{}, false, nil
	}
	id, secret := m[1], m[2]
	name := bootstrapTokenSecretPrefix + id
	s, err := a.lookup.LookupSecret(ctx, "kube-system", name)
	if apierrors.IsNotFound(err) {
		a.log.Debug("no secret for bootstrap token", "secret", name)
		return tokens.Result{}, false, nil
	}
	if err != nil {
		return tokens.Result{}, false, fmt.Errorf("bootstrap token secret %s: %w", name, err)
	}
	user, ok, err := bootstrapUser(s, id, secret, a.now())
	if !ok && err == nil {
		a.log.Debug("bootstrap token refused", "secret", name)
	}
	if !ok {
		return tokens.Result{}, false, err
	}
	return tokens.Result{User: user}, true, nil
}

// bootstrapUser checks secret s against the token's id and secret at now.
func bootstrapUser(s *v1.Secret, id, secret string, now time.Time) (request.User, bool, error) {
	if s.DeletionTimestamp != nil || s.Type != bootstrapTokenSecretType {
		return request.User{}, false, nil
	}
	got := secretString(s, bootstrapTokenSecretKey)
	if subtle.ConstantTimeCompare([]byte(got), []byte(secret)) != 1 {
		return request.User{}, false, nil
	}
	if secretString(s, bootstrapTokenIDKey) != id {
		return request.User{}, false, nil
	}
	if bootstrapTokenExpired(s, now) {
		return request.User{}, false, nil
	}
	if secretString(s, bootstrapTokenUsageAuthKey) != "true" {
		return request.User{}, false, nil
	}
	groups, err := bootstrapGroups(s)
	if err != nil {
		return request.User{}, false, err
	}
	return request.User{Name: bootstrapUserPrefix + id, Groups: groups}, true, nil
}

// bootstrapTokenExpired: an expiration (RFC 3339) in the past, or one that
// does not parse, as upstream.
func bootstrapTokenExpired(s *v1.Secret, now time.Time) bool {
	exp := secretString(s, bootstrapTokenExpirationKey)
	if exp == "" {
		return false
	}
	t, err := time.Parse(time.RFC3339, exp)
	return err != nil || !now.Before(t)
}

// bootstrapGroups is system:bootstrappers and the secret's
// auth-extra-groups, each of which must be under system:bootstrappers:.
func bootstrapGroups(s *v1.Secret) ([]string, error) {
	groups := []string{BootstrapGroup}
	extra := secretString(s, bootstrapTokenExtraGroupsKey)
	if extra == "" {
		return groups, nil
	}
	for g := range strings.SplitSeq(extra, ",") {
		g = strings.TrimSpace(g)
		if !bootstrapGroupRE.MatchString(g) {
			return nil, fmt.Errorf("%s: bootstrap group %q is invalid (must match %s)", s.Name, g, bootstrapGroupRE)
		}
		groups = append(groups, g)
	}
	return groups, nil
}

func secretString(s *v1.Secret, key string) string {
	if v, ok := s.Data[key]; ok {
		return string(v)
	}
	return s.StringData[key]
}
