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
