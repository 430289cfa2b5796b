package nodeapi

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/cache"
)

// Upstream's authorization.webhook cache TTLs.
const (
	DefaultAuthorizedCacheTTL   = 5 * time.Minute
	DefaultUnauthorizedCacheTTL = 30 * time.Second
	authorizationCacheLimit     = 8192
)

// SubjectAccessReviewer creates SubjectAccessReviews: the clientset's
// AuthorizationV1().SubjectAccessReviews().
type SubjectAccessReviewer interface {
	Create(ctx context.Context, review *authorizationv1.SubjectAccessReview, opts metav1.CreateOptions) (*authorizationv1.SubjectAccessReview, error)
}

// AuthzConfig configures the Webhook authorization mode.
type AuthzConfig struct {
	Reviews SubjectAccessReviewer
	// AuthorizedTTL and UnauthorizedTTL are how long an allow and a deny
	// are reused (defaults 5m and 30s).
	AuthorizedTTL, UnauthorizedTTL time.Duration
	Now                            func() time.Time
}

// NewWebhookAuthorizer asks the API server with a SubjectAccessReview.
func NewWebhookAuthorizer(cfg AuthzConfig) Authorizer {
	if cfg.AuthorizedTTL == 0 {
		cfg.AuthorizedTTL = DefaultAuthorizedCacheTTL
	}
	if cfg.UnauthorizedTTL == 0 {
		cfg.UnauthorizedTTL = DefaultUnauthorizedCacheTTL
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &webhookAuthorizer{cfg: cfg, cache: cache.NewLRUExpireCacheWithClock(authorizationCacheLimit, clockFunc(cfg.Now))}
}

type webhookAuthorizer struct {
	cfg   AuthzConfig
	cache *cache.LRUExpireCache
}

type reviewResult struct {
	allowed bool
	reason  string
}

func (w *webhookAuthorizer) Authorize(ctx context.Context, a Attributes) (bool, string, error) {
	spec := reviewSpec(a)
	keyBytes, err := json.Marshal(spec)
	if err != nil {
		return false, "", fmt.Errorf("subject access review key: %w", err)
	}
	key := string(keyBytes)
	if v, ok := w.cache.Get(key); ok {
		res := v.(reviewResult)
		return res.allowed, res.reason, nil
	}
	ctx, cancel := context.WithTimeout(ctx, apiCallTimeout)
	defer cancel()
	review, err := w.cfg.Reviews.Create(ctx, &authorizationv1.SubjectAccessReview{Spec: spec}, metav1.CreateOptions{})
	if err != nil {
		return false, "", fmt.Errorf("subject access review: %w", err)
	}
	// Allowed wins; denied and no opinion both refuse here.
	res := reviewResult{allowed: review.Status.Allowed, reason: review.Status.Reason}
	ttl := w.cfg.UnauthorizedTTL
	if res.allowed {
		ttl = w.cfg.AuthorizedTTL
	}
	w.cache.Add(key, res, ttl)
	return res.allowed, res.reason, nil
}

func reviewSpec(a Attributes) authorizationv1.SubjectAccessReviewSpec {
	spec := authorizationv1.SubjectAccessReviewSpec{
		ResourceAttributes: &authorizationv1.ResourceAttributes{
			Verb: a.Verb, Version: a.APIVersion, Resource: a.Resource, Subresource: a.Subresource, Name: a.Name,
		},
	}
	if u := a.User; u != nil {
		spec.User, spec.UID, spec.Groups = u.Name, u.UID, u.Groups
		if len(u.Extra) > 0 {
			spec.Extra = make(map[string]authorizationv1.ExtraValue, len(u.Extra))
			for k, v := range u.Extra {
				spec.Extra[k] = authorizationv1.ExtraValue(v)
			}
		}
	}
	return spec
}
