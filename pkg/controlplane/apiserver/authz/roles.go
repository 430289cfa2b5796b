package authz

import "context"

// The links that stand for upstream's default cluster roles until RBAC
// serves them: each allows what its role binding grants and has no
// opinion on anything else.

// authorizeMasters: system:masters may do anything (cluster-admin).
func authorizeMasters(_ context.Context, a Attributes) (Decision, string, error) {
	if IsMaster(a.User) {
		return DecisionAllow, "", nil
	}
	return DecisionNoOpinion, "", nil
}

// authorizeOpenReviews: the review APIs (TokenReview,
// SelfSubjectAccessReview, ...) are open to every authenticated user
// (upstream's system:basic-user), except SubjectAccessReview, which asks
// about other users.
func authorizeOpenReviews(_ context.Context, a Attributes) (Decision, string, error) {
	if a.IsResourceRequest() && a.Resource.Virtual && !delegatedReview(a) {
		return DecisionAllow, "", nil
	}
	return DecisionNoOpinion, "", nil
}

// delegatedReview is a review about other users (SubjectAccessReview):
// upstream grants it to the delegating components and nodes, not to
// every user.
func delegatedReview(a Attributes) bool {
	return a.Resource.GVK.Group == "authorization.k8s.io" && a.Resource.Plural == "subjectaccessreviews"
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
