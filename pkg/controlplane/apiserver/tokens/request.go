package tokens

import (
	"time"

	"github.com/golang-jwt/jwt/v5"
	authnv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// TokenRequest limits and default, as upstream's.
const (
	DefaultExpirationSeconds = 3600
	minTokenSeconds          = 10 * 60
	maxTokenSeconds          = 1 << 32
)

// TokenRequestGVK is the kind of serviceaccounts/token's body and answer.
var TokenRequestGVK = authnv1.SchemeGroupVersion.WithKind("TokenRequest")

// ValidateTokenRequest is upstream's ValidateTokenRequest, of a defaulted
// request (ExpirationSeconds set).
func ValidateTokenRequest(req *authnv1.TokenRequest) field.ErrorList {
	var errs field.ErrorList
	p := field.NewPath("spec", "expirationSeconds")
	if exp := *req.Spec.ExpirationSeconds; exp < minTokenSeconds {
		errs = append(errs, field.Invalid(p, exp, "may not specify a duration less than 10 minutes"))
	} else if exp > maxTokenSeconds {
		errs = append(errs, field.TooLong(p, exp, maxTokenSeconds))
	}
	return errs
}

// NewClaims are the claims of a token for the service account, issued at
// now for the audiences, valid for ttl; id is its jti. Binding it to a
// pod is BindPod's.
func NewClaims(sa *v1.ServiceAccount, audiences []string, now time.Time, ttl time.Duration, id string) *ServiceAccountClaims {
	return &ServiceAccountClaims{
		RegisteredClaims: jwt.RegisteredClaims{
			Subject:   ServiceAccountUserPrefix + sa.Namespace + ":" + sa.Name,
			Audience:  jwt.ClaimStrings(audiences),
			ExpiresAt: jwt.NewNumericDate(now.Add(ttl)),
			IssuedAt:  jwt.NewNumericDate(now),
			NotBefore: jwt.NewNumericDate(now),
			ID:        id,
		},
		Kubernetes: KubernetesClaim{Namespace: sa.Namespace, ServiceAccount: ObjectRef{Name: sa.Name, UID: string(sa.UID)}},
	}
}

// BindPod binds the claims to the pod and, when it has one, its node
// (nodeUID empty when the node is not known).
func (c *ServiceAccountClaims) BindPod(pod *v1.Pod, nodeUID string) {
	c.Kubernetes.Pod = &ObjectRef{Name: pod.Name, UID: string(pod.UID)}
	if node := pod.Spec.NodeName; node != "" {
		c.Kubernetes.Node = &ObjectRef{Name: node, UID: nodeUID}
	}
}
