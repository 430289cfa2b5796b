package realcluster

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	rbacvalidation "k8s.io/component-helpers/auth/rbac/validation"

	"github.com/nodeagent/nodeagent/pkg/controlplane/rbacpolicy"
)

// TestBootstrapPolicyMatchesKubeAPIServer: the bundled server's bootstrap
// RBAC policy (rbacpolicy.Default) is the one the real kube-apiserver
// v1.37.2 creates, object for object: the same ClusterRoles (rules that
// cover each other both ways, or the same aggregation rule), bindings
// (role and subjects), Roles and RoleBindings in their namespaces.
func TestBootstrapPolicyMatchesKubeAPIServer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rbac := cl.admin.RbacV1()
	sel := metav1.ListOptions{LabelSelector: rbacpolicy.BootstrappingLabel + "=rbac-defaults"}
	ours := rbacpolicy.Default()

	crs, err := rbac.ClusterRoles().List(ctx, sel)
	if err != nil {
		t.Fatal(err)
	}
	theirs := map[string]rbacv1.ClusterRole{}
	for _, r := range crs.Items {
		theirs[r.Name] = r
	}
	diff := &policyDiff{}
	for _, r := range ours.ClusterRoles {
		u, ok := theirs[r.Name]
		delete(theirs, r.Name)
		switch {
		case !ok:
			diff.add("clusterrole %s: not created by kube-apiserver", r.Name)
		case r.AggregationRule != nil || u.AggregationRule != nil:
			if !equality.Semantic.DeepEqual(r.AggregationRule, u.AggregationRule) {
				diff.add("clusterrole %s: aggregationRule %v, kube-apiserver's %v", r.Name, r.AggregationRule, u.AggregationRule)
			}
		default:
			diff.rules("clusterrole "+r.Name, r.Rules, u.Rules)
		}
	}
	for name := range theirs {
		diff.add("clusterrole %s: kube-apiserver's, missing here", name)
	}

	crbs, err := rbac.ClusterRoleBindings().List(ctx, sel)
	if err != nil {
		t.Fatal(err)
	}
	theirBindings := map[string]binding{}
	for _, b := range crbs.Items {
		theirBindings[b.Name] = binding{b.RoleRef, b.Subjects}
	}
	for _, b := range ours.ClusterRoleBindings {
		diff.binding("clusterrolebinding "+b.Name, binding{b.RoleRef, b.Subjects}, theirBindings, b.Name)
	}
	for name := range theirBindings {
		diff.add("clusterrolebinding %s: kube-apiserver's, missing here", name)
	}

	rs, err := rbac.Roles("").List(ctx, sel)
	if err != nil {
		t.Fatal(err)
	}
	theirRoles := map[string][]rbacv1.PolicyRule{}
	for _, r := range rs.Items {
		theirRoles[r.Namespace+"/"+r.Name] = r.Rules
	}
	for _, r := range ours.Roles {
		key := r.Namespace + "/" + r.Name
		u, ok := theirRoles[key]
		delete(theirRoles, key)
		if !ok {
			diff.add("role %s: not created by kube-apiserver", key)
			continue
		}
		diff.rules("role "+key, r.Rules, u)
	}
	for key := range theirRoles {
		diff.add("role %s: kube-apiserver's, missing here", key)
	}

	rbs, err := rbac.RoleBindings("").List(ctx, sel)
	if err != nil {
		t.Fatal(err)
	}
	theirRBs := map[string]binding{}
	for _, b := range rbs.Items {
		theirRBs[b.Namespace+"/"+b.Name] = binding{b.RoleRef, b.Subjects}
	}
	for _, b := range ours.RoleBindings {
		key := b.Namespace + "/" + b.Name
		diff.binding("rolebinding "+key, binding{b.RoleRef, b.Subjects}, theirRBs, key)
	}
	for key := range theirRBs {
		diff.add("rolebinding %s: kube-apiserver's, missing here", key)
	}
	if len(diff.lines) > 0 {
		slices.Sort(diff.lines)
		t.Errorf("the bootstrap policy differs from kube-apiserver v1.37.2's in %d places:\n%s", len(diff.lines), strings.Join(diff.lines, "\n"))
	}
}

type binding struct {
	ref      rbacv1.RoleRef
	subjects []rbacv1.Subject
}

type policyDiff struct{ lines []string }

func (d *policyDiff) add(format string, args ...any) {
	d.lines = append(d.lines, fmt.Sprintf(format, args...))
}

// rules compares two rule lists by what they grant: each must cover the
// other (upstream's own covering check).
func (d *policyDiff) rules(what string, ours, theirs []rbacv1.PolicyRule) {
	if ok, missing := rbacvalidation.Covers(ours, theirs); !ok {
		d.add("%s: lacks kube-apiserver's %v", what, missing)
	}
	if ok, extra := rbacvalidation.Covers(theirs, ours); !ok {
		d.add("%s: grants more than kube-apiserver's: %v", what, extra)
	}
}

// binding compares one binding with kube-apiserver's of the same key,
// taking it out of theirs.
func (d *policyDiff) binding(what string, ours binding, theirs map[string]binding, key string) {
	u, ok := theirs[key]
	delete(theirs, key)
	switch {
	case !ok:
		d.add("%s: not created by kube-apiserver", what)
	case ours.ref != u.ref:
		d.add("%s: binds %v, kube-apiserver's %v", what, ours.ref, u.ref)
	case !sameSubjects(ours.subjects, u.subjects):
		d.add("%s: subjects %v, kube-apiserver's %v", what, ours.subjects, u.subjects)
	}
}

func sameSubjects(a, b []rbacv1.Subject) bool {
	key := func(s rbacv1.Subject) string {
		group := s.APIGroup
		if s.Kind == rbacv1.ServiceAccountKind {
			group = "" // defaulted either way
		}
		return s.Kind + "/" + group + "/" + s.Namespace + "/" + s.Name
	}
	ka, kb := make([]string, len(a)), make([]string, len(b))
	for i, s := range a {
		ka[i] = key(s)
	}
	for i, s := range b {
		kb[i] = key(s)
	}
	slices.Sort(ka)
	slices.Sort(kb)
	return slices.Equal(ka, kb)
}
