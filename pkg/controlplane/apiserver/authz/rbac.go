package authz

import (
	"context"
	"fmt"

	rbacv1 "k8s.io/api/rbac/v1"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"

	"github.com/nodeagent/nodeagent/pkg/controlplane/apiserver/request"
	"github.com/nodeagent/nodeagent/pkg/controlplane/apiserver/tokens"
)

// RBACReader reads the RBAC objects as the authorizer needs them, from
// the API server's watch cache (upstream's authorizer reads informers):
// a missing role is an error whose text says so (upstream's lister
// NotFound: `clusterrole.rbac.authorization.k8s.io "x" not found`).
type RBACReader interface {
	GetRole(ctx context.Context, namespace, name string) (*rbacv1.Role, error)
	GetClusterRole(ctx context.Context, name string) (*rbacv1.ClusterRole, error)
	ListRoleBindings(ctx context.Context, namespace string) ([]*rbacv1.RoleBinding, error)
	ListClusterRoleBindings(ctx context.Context) ([]*rbacv1.ClusterRoleBinding, error)
}

// RBACAuthorizer is upstream's RBAC authorizer: a request is allowed
// when a rule of a role bound to the user allows it, ClusterRoleBindings
// everywhere, RoleBindings (to a Role or a ClusterRole) in their
// namespace only. It allows or has no opinion, never denies.
type RBACAuthorizer struct {
	Reader RBACReader
}

// ruleVisitor sees each rule that applies to the user, or an error
// resolving one binding's role; it returns false to stop.
type ruleVisitor func(source fmt.Stringer, rule *rbacv1.PolicyRule, err error) bool

// Authorize allows what a bound rule allows. The reason of an allow names
// the binding; without one it lists the roles that could not be read,
// as upstream ("RBAC: ...").
func (z *RBACAuthorizer) Authorize(ctx context.Context, a Attributes) (Decision, string, error) {
	var (
		allowed string
		errs    []error
	)
	z.VisitRulesFor(ctx, a.User, a.Namespace, func(source fmt.Stringer, rule *rbacv1.PolicyRule, err error) bool {
		if err != nil {
			errs = append(errs, err)
			return true
		}
		if rule != nil && RuleAllows(a, rule) {
			allowed = fmt.Sprintf("RBAC: allowed by %s", source)
			return false
		}
		return true
	})
	if allowed != "" {
		return DecisionAllow, allowed, nil
	}
	if len(errs) > 0 {
		return DecisionNoOpinion, fmt.Sprintf("RBAC: %v", utilerrors.NewAggregate(errs)), nil
	}
	return DecisionNoOpinion, "", nil
}

// RulesFor lists the rules bound to u in namespace (cluster-wide ones
// only for ""), with the errors met on the way: the list is then
// incomplete.
func (z *RBACAuthorizer) RulesFor(ctx context.Context, u request.User, namespace string) ([]rbacv1.PolicyRule, error) {
	var (
		rules []rbacv1.PolicyRule
		errs  []error
	)
	z.VisitRulesFor(ctx, u, namespace, func(_ fmt.Stringer, rule *rbacv1.PolicyRule, err error) bool {
		if rule != nil {
			rules = append(rules, *rule)
		}
		if err != nil {
			errs = append(errs, err)
		}
		return true
	})
	return rules, utilerrors.NewAggregate(errs)
}

// VisitRulesFor visits the rules of the ClusterRoleBindings, then of the
// namespace's RoleBindings, that bind u, as upstream's
// DefaultRuleResolver.VisitRulesFor.
func (z *RBACAuthorizer) VisitRulesFor(ctx context.Context, u request.User, namespace string, visit ruleVisitor) {
	crbs, err := z.Reader.ListClusterRoleBindings(ctx)
	if err != nil && !visit(nil, nil, err) {
		return
	}
	for _, b := range crbs {
		i, ok := appliesTo(u, b.Subjects, "")
		if !ok {
			continue
		}
		src := bindingSource{kind: "ClusterRoleBinding", name: b.Name, ref: b.RoleRef, subject: &b.Subjects[i]}
		if !z.visitRole(ctx, b.RoleRef, "", src, visit) {
			return
		}
	}
	if namespace == "" {
		return
	}
	rbs, err := z.Reader.ListRoleBindings(ctx, namespace)
	if err != nil && !visit(nil, nil, err) {
		return
	}
	for _, b := range rbs {
		i, ok := appliesTo(u, b.Subjects, namespace)
		if !ok {
			continue
		}
		src := bindingSource{kind: "RoleBinding", name: b.Name + "/" + b.Namespace, namespace: b.Namespace, ref: b.RoleRef, subject: &b.Subjects[i]}
		if !z.visitRole(ctx, b.RoleRef, namespace, src, visit) {
			return
		}
	}
}

func (z *RBACAuthorizer) visitRole(ctx context.Context, ref rbacv1.RoleRef, namespace string, src fmt.Stringer, visit ruleVisitor) bool {
	rules, err := z.RoleRefRules(ctx, ref, namespace)
	if err != nil {
		return visit(nil, nil, err)
	}
	for i := range rules {
		if !visit(src, &rules[i], nil) {
			return false
		}
	}
	return true
}

// RoleRefRules returns the rules of the role a binding in namespace
// ("" for a ClusterRoleBinding) refers to.
func (z *RBACAuthorizer) RoleRefRules(ctx context.Context, ref rbacv1.RoleRef, namespace string) ([]rbacv1.PolicyRule, error) {
	switch ref.Kind {
	case "Role":
		r, err := z.Reader.GetRole(ctx, namespace, ref.Name)
		if err != nil {
			return nil, err
		}
		return r.Rules, nil
	case "ClusterRole":
		r, err := z.Reader.GetClusterRole(ctx, ref.Name)
		if err != nil {
			return nil, err
		}
		return r.Rules, nil
	default:
		return nil, fmt.Errorf("unsupported role reference kind: %q", ref.Kind)
	}
}

// appliesTo returns the first subject that is u, as upstream's
// appliesToUser: a service account subject without a namespace is the
// binding's namespace's.
func appliesTo(u request.User, subjects []rbacv1.Subject, namespace string) (int, bool) {
	for i, s := range subjects {
		if subjectIs(u, s, namespace) {
			return i, true
		}
	}
	return 0, false
}

func subjectIs(u request.User, s rbacv1.Subject, namespace string) bool {
	switch s.Kind {
	case rbacv1.UserKind:
		return u.Name == s.Name
	case rbacv1.GroupKind:
		return HasGroup(u, s.Name)
	case rbacv1.ServiceAccountKind:
		ns := namespace
		if s.Namespace != "" {
			ns = s.Namespace
		}
		return ns != "" && u.Name == tokens.ServiceAccountUserPrefix+ns+":"+s.Name
	}
	return false
}

// bindingSource names the binding that granted a rule, as upstream's
// describers: `ClusterRoleBinding "b" of ClusterRole "r" to User "u"`.
type bindingSource struct {
	kind, name, namespace string
	ref                   rbacv1.RoleRef
	subject               *rbacv1.Subject
}

func (s bindingSource) String() string {
	return fmt.Sprintf("%s %q of %s %q to %s", s.kind, s.name, s.ref.Kind, s.ref.Name, describeSubject(s.subject, s.namespace))
}

func describeSubject(s *rbacv1.Subject, bindingNamespace string) string {
	if s.Kind != rbacv1.ServiceAccountKind {
		return fmt.Sprintf("%s %q", s.Kind, s.Name)
	}
	ns := s.Namespace
	if ns == "" {
		ns = bindingNamespace
	}
	return fmt.Sprintf("%s %q", s.Kind, s.Name+"/"+ns)
}
