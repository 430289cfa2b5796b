package authz

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	rbacvalidation "k8s.io/component-helpers/auth/rbac/validation"

	"github.com/nodeagent/nodeagent/pkg/controlplane/apiserver/request"
	"github.com/nodeagent/nodeagent/pkg/controlplane/registry"
)

// Escalation is upstream's escalation prevention for RBAC writes
// (pkg/registry/rbac/*/policybased): a user may write a Role or
// ClusterRole only with every rule it grants, or with the escalate verb
// on it; a binding only with every rule of the role it binds, or with
// the bind verb on that role. system:masters may always.
type Escalation struct {
	// Authorizer decides escalate and bind: the server's chain.
	Authorizer Authorizer
	// Rules are the requester's own RBAC rules.
	Rules *RBACAuthorizer
	// Resource returns the served rbac.authorization.k8s.io/v1 resource
	// of a plural name (roles, clusterroles), the object of escalate and bind.
	Resource func(plural string) *registry.Resource
}

// fullAuthority is what an aggregationRule needs: it may gather anything.
var fullAuthority = []rbacv1.PolicyRule{
	{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}},
	{Verbs: []string{"*"}, NonResourceURLs: []string{"*"}},
}

// ConfirmWrite checks the create (old nil) or update of an RBAC object
// by u in namespace; other objects pass. A refusal is upstream's
// Forbidden.
func (e Escalation) ConfirmWrite(ctx context.Context, u request.User, namespace string, obj, old runtime.Object) error {
	if IsMaster(u) || (old != nil && onlyGCFieldsChanged(obj, old)) {
		return nil
	}
	switch o := obj.(type) {
	case *rbacv1.Role:
		return e.confirmRole(ctx, u, "roles", namespace, o.Name, o.Rules, false)
	case *rbacv1.ClusterRole:
		agg := hasAggregationRule(o.AggregationRule)
		if oc, ok := old.(*rbacv1.ClusterRole); ok && hasAggregationRule(oc.AggregationRule) {
			agg = true
		}
		return e.confirmRole(ctx, u, "clusterroles", "", o.Name, o.Rules, agg)
	case *rbacv1.RoleBinding:
		return e.confirmBinding(ctx, u, "rolebindings", namespace, o.Name, o.RoleRef)
	case *rbacv1.ClusterRoleBinding:
		return e.confirmBinding(ctx, u, "clusterrolebindings", "", o.Name, o.RoleRef)
	}
	return nil
}

func hasAggregationRule(r *rbacv1.AggregationRule) bool {
	return r != nil && len(r.ClusterRoleSelectors) > 0
}

func (e Escalation) confirmRole(ctx context.Context, u request.User, plural, namespace, name string, rules []rbacv1.PolicyRule, aggregation bool) error {
	if e.allowed(ctx, u, "escalate", plural, namespace, name) {
		return nil
	}
	gr := rbacResource(plural)
	if err := e.ConfirmNoEscalation(ctx, u, namespace, rules); err != nil {
		return apierrors.NewForbidden(gr, name, err)
	}
	if aggregation && e.ConfirmNoEscalation(ctx, u, namespace, fullAuthority) != nil {
		return apierrors.NewForbidden(gr, name, errors.New("must have cluster-admin privileges to use the aggregationRule"))
	}
	return nil
}

func (e Escalation) confirmBinding(ctx context.Context, u request.User, plural, namespace, name string, ref rbacv1.RoleRef) error {
	role := map[string]string{"Role": "roles", "ClusterRole": "clusterroles"}[ref.Kind]
	if role != "" && ref.APIGroup == rbacv1.GroupName && e.allowed(ctx, u, "bind", role, namespace, ref.Name) {
		return nil
	}
	gr := rbacResource(plural)
	rules, err := e.Rules.RoleRefRules(ctx, ref, namespace)
	if err != nil {
		return apierrors.NewForbidden(gr, name, err)
	}
	if err := e.ConfirmNoEscalation(ctx, u, namespace, rules); err != nil {
		return apierrors.NewForbidden(gr, name, err)
	}
	return nil
}

// allowed asks the chain whether u may verb the named role: escalate
// and bind are granted like any verb, by a rule naming them.
func (e Escalation) allowed(ctx context.Context, u request.User, verb, plural, namespace, name string) bool {
	res := e.Resource(plural)
	if res == nil {
		return false
	}
	d, _, _ := e.Authorizer.Authorize(ctx, Attributes{User: u, Verb: verb, Resource: res, Namespace: namespace, Name: name})
	return d == DecisionAllow
}

func rbacResource(plural string) schema.GroupResource {
	return schema.GroupResource{Group: rbacv1.GroupName, Resource: plural}
}

// ConfirmNoEscalation fails unless u's own rules in namespace cover
// rules, with upstream's message listing what is missing.
func (e Escalation) ConfirmNoEscalation(ctx context.Context, u request.User, namespace string, rules []rbacv1.PolicyRule) error {
	owner, resolveErr := e.Rules.RulesFor(ctx, u, namespace)
	covered, missing := rbacvalidation.Covers(owner, rules)
	if covered {
		return nil
	}
	var lines []string
	for _, r := range CompactRules(missing) {
		if s := CompactString(r); !slices.Contains(lines, s) {
			lines = append(lines, s)
		}
	}
	slices.Sort(lines)
	msg := fmt.Sprintf("user %q (groups=%q) is attempting to grant RBAC permissions not currently held:\n%s", u.Name, u.Groups, strings.Join(lines, "\n"))
	if resolveErr != nil {
		msg += fmt.Sprintf("; resolution errors: %v", []error{resolveErr})
	}
	return errors.New(msg)
}

// simpleResource keys the rules CompactRules merges.
type simpleResource struct {
	group, resource string
	named           bool
	name            string
}

// CompactRules merges the rules on one group and resource (and at most
// one name) that differ only by verb, as upstream's CompactRules: Covers
// breaks the missing rules down to one verb each.
func CompactRules(rules []rbacv1.PolicyRule) []rbacv1.PolicyRule {
	var out []rbacv1.PolicyRule
	simple := map[simpleResource]int{}
	for _, r := range rules {
		key, ok := simpleKey(r)
		if !ok {
			out = append(out, r)
			continue
		}
		if i, seen := simple[key]; seen {
			out[i].Verbs = append(out[i].Verbs, r.Verbs...)
			continue
		}
		simple[key] = len(out)
		out = append(out, *r.DeepCopy())
	}
	return out
}

func simpleKey(r rbacv1.PolicyRule) (simpleResource, bool) {
	if len(r.ResourceNames) > 1 || len(r.NonResourceURLs) > 0 || len(r.APIGroups) != 1 || len(r.Resources) != 1 {
		return simpleResource{}, false
	}
	only := rbacv1.PolicyRule{APIGroups: r.APIGroups, Resources: r.Resources, Verbs: r.Verbs, ResourceNames: r.ResourceNames}
	if !reflect.DeepEqual(only, r) {
		return simpleResource{}, false
	}
	key := simpleResource{group: r.APIGroups[0], resource: r.Resources[0]}
	if len(r.ResourceNames) == 1 {
		key.named, key.name = true, r.ResourceNames[0]
	}
	return key, true
}

// CompactString is upstream's rule text in escalation messages:
// {APIGroups:["g"], Resources:["r"], NonResourceURLs:[...],
// ResourceNames:[...], Verbs:["v"]}, empty fields left out.
func CompactString(r rbacv1.PolicyRule) string {
	var parts []string
	for _, f := range []struct {
		name string
		vals []string
	}{{"APIGroups", r.APIGroups}, {"Resources", r.Resources}, {"NonResourceURLs", r.NonResourceURLs}, {"ResourceNames", r.ResourceNames}, {"Verbs", r.Verbs}} {
		if len(f.vals) > 0 {
			parts = append(parts, fmt.Sprintf("%s:%q", f.name, f.vals))
		}
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// onlyGCFieldsChanged is upstream's IsOnlyMutatingGCFields: an update
// that changes only owner references and finalizers (the garbage
// collector's) needs no escalation check.
func onlyGCFieldsChanged(obj, old runtime.Object) bool {
	if obj == nil || old == nil {
		return false
	}
	copied := obj.DeepCopyObject()
	cm, err1 := meta.Accessor(copied)
	om, err2 := meta.Accessor(old)
	if err1 != nil || err2 != nil {
		return false
	}
	cm.SetOwnerReferences(om.GetOwnerReferences())
	cm.SetFinalizers(om.GetFinalizers())
	cm.SetSelfLink(om.GetSelfLink())
	cm.SetManagedFields(om.GetManagedFields())
	// The stored copy and the request's may differ in what the wire
	// carries only.
	cm.SetResourceVersion(om.GetResourceVersion())
	copied.GetObjectKind().SetGroupVersionKind(old.GetObjectKind().GroupVersionKind())
	return equality.Semantic.DeepEqual(copied, old)
}
