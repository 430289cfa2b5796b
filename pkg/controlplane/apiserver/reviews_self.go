package apiserver

import (
	"net/http"

	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeagent/nodeagent/pkg/controlplane/apiserver/request"
)

// reviewRules answers a SelfSubjectRulesReview (kubectl auth can-i
// --list): the rules the chain grants the requester in the spec's
// namespace, as upstream's selfsubjectrulesreview REST.
func (s *Server) reviewRules(r *http.Request, o *authzv1.SelfSubjectRulesReview) error {
	u, ok := request.UserFrom(r.Context())
	if !ok {
		return apierrors.NewBadRequest("no user present on request")
	}
	if o.Spec.Namespace == "" {
		return apierrors.NewBadRequest("no namespace on request")
	}
	got := s.authorizers.RulesFor(r.Context(), u, o.Spec.Namespace)
	o.Status = authzv1.SubjectRulesReviewStatus{Incomplete: got.Incomplete,
		ResourceRules: []authzv1.ResourceRule{}, NonResourceRules: []authzv1.NonResourceRule{}}
	for _, rule := range got.Rules {
		o.Status.ResourceRules, o.Status.NonResourceRules = appendReviewRule(o.Status.ResourceRules, o.Status.NonResourceRules, rule)
	}
	if got.Err != nil {
		o.Status.EvaluationError = got.Err.Error()
	}
	return nil
}

// appendReviewRule splits a policy rule as upstream's RBAC RulesFor: its
// resource part and its non-resource part, each if present.
func appendReviewRule(res []authzv1.ResourceRule, nonRes []authzv1.NonResourceRule, rule rbacv1.PolicyRule) ([]authzv1.ResourceRule, []authzv1.NonResourceRule) {
	if len(rule.Resources) > 0 {
		res = append(res, authzv1.ResourceRule{Verbs: rule.Verbs, APIGroups: rule.APIGroups, Resources: rule.Resources, ResourceNames: rule.ResourceNames})
	}
	if len(rule.NonResourceURLs) > 0 {
		nonRes = append(nonRes, authzv1.NonResourceRule{Verbs: rule.Verbs, NonResourceURLs: rule.NonResourceURLs})
	}
	return res, nonRes
}

// reviewSelf answers a SelfSubjectReview (kubectl auth whoami) with the
// authenticated user, stamped with the time, as upstream.
func (s *Server) reviewSelf(r *http.Request, o *authnv1.SelfSubjectReview) {
	u, _ := request.UserFrom(r.Context())
	o.ObjectMeta = metav1.ObjectMeta{CreationTimestamp: metav1.Now()}
	o.Status = authnv1.SelfSubjectReviewStatus{UserInfo: userInfo(u)}
}

// userInfo is the user as the authentication API shows it (a
// SelfSubjectReview's, a TokenReview's).
func userInfo(u request.User) authnv1.UserInfo {
	info := authnv1.UserInfo{Username: u.Name, UID: u.UID, Groups: u.Groups}
	if len(u.Extra) > 0 {
		info.Extra = make(map[string]authnv1.ExtraValue, len(u.Extra))
		for k, v := range u.Extra {
			info.Extra[k] = authnv1.ExtraValue(v)
		}
	}
	return info
}
