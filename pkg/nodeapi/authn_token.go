package nodeapi

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/cache"
)

// DefaultAuthenticationCacheTTL is upstream's authentication.webhook.cacheTTL.
const DefaultAuthenticationCacheTTL = 2 * time.Minute

// apiCallTimeout bounds each TokenReview and SubjectAccessReview.
const apiCallTimeout = 10 * time.Second

// TokenReviewer creates TokenReviews: the clientset's
// AuthenticationV1().TokenReviews().
type TokenReviewer interface {
	Create(ctx context.Context, review *authenticationv1.TokenReview, opts metav1.CreateOptions) (*authenticationv1.TokenReview, error)
}

var errInvalidToken = errors.New("invalid bearer token")

// tokenAuthenticator reviews bearer tokens with the API server and keeps
// each answer (yes or no, not failures to ask) for the cache TTL.
type tokenAuthenticator struct {
	reviews TokenReviewer
	ttl     time.Duration
	cache   *cache.LRUExpireCache
}

type tokenResult struct {
	user *UserInfo
	ok   bool
}

func newTokenAuthenticator(reviews TokenReviewer, ttl time.Duration, now func() time.Time) *tokenAuthenticator {
	if ttl == 0 {
		ttl = DefaultAuthenticationCacheTTL
	}
	return &tokenAuthenticator{reviews: reviews, ttl: ttl,
		cache: cache.NewLRUExpireCacheWithClock(authenticationCacheLimit, clockFunc(now))}
}

func (a *tokenAuthenticator) AuthenticateRequest(r *http.Request) (*UserInfo, bool, error) {
	parts := strings.Fields(r.Header.Get("Authorization"))
	if len(parts) < 2 || !strings.EqualFold(parts[0], "bearer") {
		return nil, false, nil
	}
	user, ok, err := a.authenticateToken(r.Context(), parts[1])
	if err != nil {
		return nil, false, err
	}
	if !ok {
		return nil, false, errInvalidToken
	}
	// Nothing past this point (the runtime's streaming server behind a
	// proxied exec, say) needs the caller's credential.
	r.Header.Del("Authorization")
	return user, true, nil
}

func (a *tokenAuthenticator) authenticateToken(ctx context.Context, token string) (*UserInfo, bool, error) {
	// The cache keys on a hash so that tokens do not sit in memory.
	key := sha256.Sum256([]byte(token))
	if v, ok := a.cache.Get(key); ok {
		res := v.(tokenResult)
		return res.user, res.ok, nil
	}
	ctx, cancel := context.WithTimeout(ctx, apiCallTimeout)
	defer cancel()
	review, err := a.reviews.Create(ctx, &authenticationv1.TokenReview{
		Spec: authenticationv1.TokenReviewSpec{Token: token},
	}, metav1.CreateOptions{})
	if err != nil {
		return nil, false, fmt.Errorf("token review: %w", err)
	}
	res := tokenResult{ok: review.Status.Authenticated}
	if res.ok {
		u := review.Status.User
		res.user = &UserInfo{Name: u.Username, UID: u.UID, Groups: u.Groups, Extra: extraFromReview(u.Extra)}
	}
	a.cache.Add(key, res, a.ttl)
	return res.user, res.ok, nil
}

func extraFromReview(in map[string]authenticationv1.ExtraValue) map[string][]string {
	if len(in) == 0 {
		return nil
	}
	out := make(map[string][]string, len(in))
	for k, v := range in {
		out[k] = []string(v)
	}
	return out
}

// clockFunc adapts a now function to the caches' clock.
type clockFunc func() time.Time

func (f clockFunc) Now() time.Time { return f() }
