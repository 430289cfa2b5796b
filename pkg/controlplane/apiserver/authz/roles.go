package authz

import "context"

// The links that stand for upstream's default cluster roles and their
// bindings, ahead of RBAC: each allows what its role binding grants and
// has no opinion on anything else. Their rules (rules.go) are what a
// SelfSubjectRulesReview lists for them.

// authorizeMasters: system:masters may do anything (cluster-admin).
func authorizeMasters(_ context.Context, a Attributes) (Decision, string, error) {
	if IsMaster(a.User) {
		return DecisionAllow, "", nil
	}
	return DecisionNoOpinion, "", nil
}

// authorizeOpenReviews: the reviews of one's own access and identity are
// open to every authenticated user, as upstream's system:basic-user
// (selfsubjectaccessreviews, selfsubjectrulesreviews, selfsubjectreviews).
// TokenReview and SubjectAccessReview ask about other users' tokens and
// rights: see authorizeDelegators.
func authorizeOpenReviews(_ context.Context, a Attributes) (Decision, string, error) {
	if a.IsResourceRequest() && a.Verb == "create" && selfReviews[a.Resource.GVK.Group+"/"+a.Resource.Plural] {
		return DecisionAllow, "", nil
	}
	return DecisionNoOpinion, "", nil
}

var selfReviews = map[string]bool{
	"authorization.k8s.io/selfsubjectaccessreviews": true,
	"authorization.k8s.io/selfsubjectrulesreviews":  true,
	"authentication.k8s.io/selfsubjectreviews":      true,
}

// delegatedReviews are the reviews of system:auth-delegator: a
// component that serves its own authenticated API checks its clients'
// tokens and rights with them.
var delegatedReviews = map[string]bool{
	"authentication.k8s.io/tokenreviews":        true,
	"authorization.k8s.io/subjectaccessreviews": true,
}

// delegators are the users upstream's bootstrap policy lets create
// delegatedReviews: its system:kube-controller-manager and
// system:kube-scheduler roles carry the rules (system:auth-delegator
// itself is bound to nobody by default). Masters may anyway, nodes by
// the node authorizer; anyone else (service accounts) needs an RBAC
// binding, as upstream.
var delegators = map[string]bool{"system:kube-controller-manager": true, "system:kube-scheduler": true}

// authorizeDelegators allows delegatedReviews to delegators.
func authorizeDelegators(_ context.Context, a Attributes) (Decision, string, error) {
	if a.IsResourceRequest() && a.Verb == "create" && delegators[a.User.Name] &&
		delegatedReviews[a.Resource.GVK.Group+"/"+a.Resource.Plural] {
		return DecisionAllow, "", nil
	}
	return DecisionNoOpinion, "", nil
}

// metricsPath is where the server's own metrics are served.
const metricsPath = "/metrics"

// authorizeMonitoring: system:monitoring may read /metrics (the admin
// may also DELETE it, to reset).
func authorizeMonitoring(_ context.Context, a Attributes) (Decision, string, error) {
	if !a.IsResourceRequest() && a.Path == metricsPath && a.Verb == "get" && HasGroup(a.User, MonitoringGroup) {
		return DecisionAllow, "", nil
	}
	return DecisionNoOpinion, "", nil
}
