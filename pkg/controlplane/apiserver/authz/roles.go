package authz

import "context"

// authorizeMasters: system:masters may do anything, as upstream's
// privileged-group authorizer that comes first in kube-apiserver's chain.
// As upstream's, it lists no rules: a master's SelfSubjectRulesReview
// shows cluster-admin's through its bootstrap binding.
// Everything else upstream's default roles grant (system:basic-user,
// system:monitoring, the components' review rights) comes from the
// bootstrap policy through RBAC.
func authorizeMasters(_ context.Context, a Attributes) (Decision, string, error) {
	if IsMaster(a.User) {
		return DecisionAllow, "", nil
	}
	return DecisionNoOpinion, "", nil
}
