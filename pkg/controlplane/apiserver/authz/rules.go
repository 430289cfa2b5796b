package authz

import (
	"context"
	"errors"

	rbacv1 "k8s.io/api/rbac/v1"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"

	"github.com/nodeagent/nodeagent/pkg/controlplane/apiserver/request"
)

// ruleLister is a link that can say what it grants a user in a
// namespace, as upstream's authorizer.RuleResolver: incomplete when it
// grants more than it can list.
type ruleLister interface {
	ListRules(ctx context.Context, u request.User, namespace string) (rules []rbacv1.PolicyRule, incomplete bool, err error)
}

// Rules is what the chain grants a user in a namespace: a
// SelfSubjectRulesReview's status (kubectl auth can-i --list).
type Rules struct {
	Rules      []rbacv1.PolicyRule
	Incomplete bool
	// Err holds what could not be listed (the review's evaluationError).
	Err error
}

// RulesFor collects the rules of the chain's links in order, as
// upstream's union of rule resolvers.
func (c Chain) RulesFor(ctx context.Context, u request.User, namespace string) Rules {
	var (
		out  Rules
		errs []error
	)
	for _, l := range c {
		rl, ok := l.Authorizer.(ruleLister)
		if !ok {
			continue
		}
		rules, incomplete, err := rl.ListRules(ctx, u, namespace)
		out.Rules = append(out.Rules, rules...)
		out.Incomplete = out.Incomplete || incomplete
		if err != nil {
			errs = append(errs, err)
		}
	}
	out.Err = utilerrors.NewAggregate(errs)
	return out
}

// grantLink is one of the hard-coded links: it decides with authorize
// and lists its grants with rules.
type grantLink struct {
	authorize AuthorizerFunc
	rules     func(u request.User) []rbacv1.PolicyRule
}

func (g grantLink) Authorize(ctx context.Context, a Attributes) (Decision, string, error) {
	return g.authorize(ctx, a)
}

func (g grantLink) ListRules(_ context.Context, u request.User, _ string) ([]rbacv1.PolicyRule, bool, error) {
	return g.rules(u), false, nil
}

// The rules of the hard-coded links, as upstream's bootstrap roles
// (cluster-admin, system:basic-user, system:monitoring) give them.
var (
	clusterAdminRules = fullAuthority
	basicUserRules    = []rbacv1.PolicyRule{
		{Verbs: []string{"create"}, APIGroups: []string{"authorization.k8s.io"}, Resources: []string{"selfsubjectaccessreviews", "selfsubjectrulesreviews"}},
		{Verbs: []string{"create"}, APIGroups: []string{"authentication.k8s.io"}, Resources: []string{"selfsubjectreviews"}},
	}
	delegatorRules = []rbacv1.PolicyRule{
		{Verbs: []string{"create"}, APIGroups: []string{"authentication.k8s.io"}, Resources: []string{"tokenreviews"}},
		{Verbs: []string{"create"}, APIGroups: []string{"authorization.k8s.io"}, Resources: []string{"subjectaccessreviews"}},
	}
	monitoringRules = []rbacv1.PolicyRule{{Verbs: []string{"get"}, NonResourceURLs: []string{metricsPath}}}
)

func rulesIf(grant func(request.User) bool, rules []rbacv1.PolicyRule) func(request.User) []rbacv1.PolicyRule {
	return func(u request.User) []rbacv1.PolicyRule {
		if grant(u) {
			return rules
		}
		return nil
	}
}

func everyone(request.User) bool { return true }

func isDelegator(u request.User) bool { return delegators[u.Name] }

func isMonitor(u request.User) bool { return HasGroup(u, MonitoringGroup) }

// ListRules: a node's rules depend on its pods; upstream's node
// authorizer lists none and says so.
func (z *NodeAuthorizer) ListRules(_ context.Context, u request.User, _ string) ([]rbacv1.PolicyRule, bool, error) {
	if _, ok := NodeName(u); ok {
		return nil, true, errors.New("node authorizer does not support user rule resolution")
	}
	return nil, false, nil
}

// ListRules lists the bound rules; a role that could not be read is an
// error, not incompleteness, as upstream's RBAC authorizer.
func (z *RBACAuthorizer) ListRules(ctx context.Context, u request.User, namespace string) ([]rbacv1.PolicyRule, bool, error) {
	rules, err := z.RulesFor(ctx, u, namespace)
	return rules, false, err
}
