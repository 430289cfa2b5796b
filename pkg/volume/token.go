package volume

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Refresh bounds of the kubelet's token manager: a token is renewed once
// 80% of its lifetime has passed or it is a day old, give or take a
// jitter that spreads the renewals of many pods.
const (
	tokenMaxTTL    = 24 * time.Hour
	tokenMaxJitter = 10 * time.Second
)

// tokenKey identifies one requested token; tokens are bound to the pod,
// so its UID is part of the key.
type tokenKey struct {
	namespace, serviceAccount, audience string
	expirationSeconds                   int64
	podUID                              types.UID
}

// tokenCache keeps the service account tokens of projected volumes and
// asks for new ones only when due, as the kubelet's token manager does.
type tokenCache struct {
	now    func() time.Time
	jitter func() time.Duration
	log    *slog.Logger

	mu     sync.Mutex
	tokens map[tokenKey]*authenticationv1.TokenRequest
}

func newTokenCache(log *slog.Logger) *tokenCache {
	return &tokenCache{
		now:    time.Now,
		jitter: func() time.Duration { return time.Duration(rand.Float64() * float64(tokenMaxJitter)) },
		log:    log,
		tokens: map[tokenKey]*authenticationv1.TokenRequest{},
	}
}

// get returns a valid token for req: the cached one while it is fresh,
// else a new one. When renewal fails, a cached token that has not expired
// is still returned (the pod keeps working while the API is away).
func (tc *tokenCache) get(ctx context.Context, g Getter, ns, sa string, req *authenticationv1.TokenRequest) (*authenticationv1.TokenRequest, error) {
	key := keyFor(ns, sa, req)
	cached, ok := tc.lookup(key)
	if ok && !tc.requiresRefresh(cached, req) {
		return cached, nil
	}
	fresh, err := requestToken(ctx, g, ns, sa, req)
	if err != nil {
		switch {
		case !ok:
			return nil, fmt.Errorf("failed to fetch token: %w", err)
		case tc.expired(cached):
			return nil, fmt.Errorf("token for %s/%s expired and refresh failed: %w", ns, sa, err)
		}
		tc.log.Error("couldn't update token, using the cached one", "namespace", ns, "serviceAccount", sa, "err", err)
		return cached, nil
	}
	tc.store(key, fresh)
	return fresh, nil
}

func requestToken(ctx context.Context, g Getter, ns, sa string, req *authenticationv1.TokenRequest) (*authenticationv1.TokenRequest, error) {
	if g == nil {
		return nil, errors.New("cannot use TokenManager when kubelet is in standalone mode")
	}
	tr, err := g.CreateToken(ctx, ns, sa, req.DeepCopy())
	if err != nil {
		return nil, err
	}
	if tr == nil || tr.Status.Token == "" {
		return nil, errors.New("token request returned no token")
	}
	return tr, nil
}

func keyFor(ns, sa string, req *authenticationv1.TokenRequest) tokenKey {
	k := tokenKey{namespace: ns, serviceAccount: sa}
	if len(req.Spec.Audiences) > 0 {
		k.audience = req.Spec.Audiences[0]
	}
	if req.Spec.ExpirationSeconds != nil {
		k.expirationSeconds = *req.Spec.ExpirationSeconds
	}
	if req.Spec.BoundObjectRef != nil {
		k.podUID = req.Spec.BoundObjectRef.UID
	}
	return k
}

// lookup returns the cached token, dropping expired ones on the way.
func (tc *tokenCache) lookup(key tokenKey) (*authenticationv1.TokenRequest, bool) {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	for k, tr := range tc.tokens {
		if tc.expired(tr) {
			delete(tc.tokens, k)
		}
	}
	tr, ok := tc.tokens[key]
	return tr, ok
}

func (tc *tokenCache) store(key tokenKey, tr *authenticationv1.TokenRequest) {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	tc.tokens[key] = tr
}

// forgetPod drops the tokens bound to a pod whose volumes are gone.
func (tc *tokenCache) forgetPod(uid types.UID) {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	for k := range tc.tokens {
		if k.podUID == uid {
			delete(tc.tokens, k)
		}
	}
}

func (tc *tokenCache) expired(tr *authenticationv1.TokenRequest) bool {
	return tc.now().After(tr.Status.ExpirationTimestamp.Time)
}

// requiresRefresh: the issue time is derived from the expiry and the
// lifetime (the response's, else the requested one); the token is due
// 24h after issue or within the last 20% of its lifetime.
func (tc *tokenCache) requiresRefresh(tr, req *authenticationv1.TokenRequest) bool {
	secs := tr.Spec.ExpirationSeconds
	if secs == nil {
		secs = req.Spec.ExpirationSeconds
	}
	if secs == nil {
		return false
	}
	now := tc.now()
	exp := tr.Status.ExpirationTimestamp.Time
	ttl := time.Duration(*secs) * time.Second
	iat := exp.Add(-ttl)
	jitter := tc.jitter()
	if now.After(iat.Add(tokenMaxTTL - jitter)) {
		return true
	}
	return now.After(exp.Add(-ttl*20/100 - jitter))
}
