package authz

import (
	"context"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/nodeagent/nodeagent/pkg/controlplane/apiserver/request"
	"github.com/nodeagent/nodeagent/pkg/controlplane/registry"
)

func res(group, plural string, namespaced bool) *registry.Resource {
	return &registry.Resource{GVK: schema.GroupVersionKind{Group: group, Version: "v1"}, Plural: plural, Namespaced: namespaced}
}

func resAttrs(verb, group, plural, sub, name string) Attributes {
	return Attributes{Verb: verb, Resource: res(group, plural, true), Subresource: sub, Name: name, Namespace: "ns"}
}

func pathAttrs(verb, path string) Attributes { return Attributes{Verb: verb, Path: path} }

// TestRuleAllows carries upstream's rbac_test.go TestRuleMatches cases
// (plugin/pkg/auth/authorizer/rbac) as facts.
func TestRuleAllows(t *testing.T) {
	tests := []struct {
		name       string
		rule       rbacv1.PolicyRule
		pass, fail []Attributes
	}{
		{"star verb, exact match other",
			rbacv1.PolicyRule{Verbs: []string{"*"}, APIGroups: []string{"group1"}, Resources: []string{"res1"}},
			[]Attributes{resAttrs("get", "group1", "res1", "", ""), resAttrs("update", "group1", "res1", "", "")},
			[]Attributes{resAttrs("get", "group2", "res1", "", ""), resAttrs("get", "group1", "res2", "", ""), pathAttrs("get", "/api")}},
		{"star group, exact match other",
			rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{"*"}, Resources: []string{"res1"}},
			[]Attributes{resAttrs("get", "group1", "res1", "", ""), resAttrs("get", "group2", "res1", "", "")},
			[]Attributes{resAttrs("update", "group1", "res1", "", ""), resAttrs("get", "group1", "res2", "", "")}},
		{"star resource, exact match other",
			rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{"group1"}, Resources: []string{"*"}},
			[]Attributes{resAttrs("get", "group1", "res1", "", ""), resAttrs("get", "group1", "res2", "", ""), resAttrs("get", "group1", "res1", "status", "")},
			[]Attributes{resAttrs("get", "group2", "res1", "", ""), resAttrs("update", "group1", "res1", "", "")}},
		{"tuple expansion",
			rbacv1.PolicyRule{Verbs: []string{"get", "update"}, APIGroups: []string{"group1", "group2"}, Resources: []string{"res1", "res2"}},
			[]Attributes{resAttrs("get", "group1", "res1", "", ""), resAttrs("update", "group2", "res2", "", "")},
			[]Attributes{resAttrs("delete", "group1", "res1", "", ""), resAttrs("get", "group3", "res1", "", ""), resAttrs("get", "group1", "res3", "", "")}},
		{"star nonresource, exact match other",
			rbacv1.PolicyRule{Verbs: []string{"get"}, NonResourceURLs: []string{"*"}},
			[]Attributes{pathAttrs("get", "/apis"), pathAttrs("get", "/foo/bar")},
			[]Attributes{pathAttrs("post", "/apis"), resAttrs("get", "", "pods", "", "")}},
		{"star nonresource subpath",
			rbacv1.PolicyRule{Verbs: []string{"get"}, NonResourceURLs: []string{"/foo/*"}},
			[]Attributes{pathAttrs("get", "/foo/bar"), pathAttrs("get", "/foo/baz/one"), pathAttrs("get", "/foo/")},
			[]Attributes{pathAttrs("get", "/foo"), pathAttrs("get", "/bar/foo")}},
		{"star verb, exact nonresource",
			rbacv1.PolicyRule{Verbs: []string{"*"}, NonResourceURLs: []string{"/foo", "/foo/bar/one"}},
			[]Attributes{pathAttrs("get", "/foo"), pathAttrs("post", "/foo/bar/one")},
			[]Attributes{pathAttrs("get", "/foo/bar"), pathAttrs("get", "/foo/bar/one/two")}},
		{"resource with subresource",
			rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods/log"}},
			[]Attributes{resAttrs("get", "", "pods", "log", "p")},
			[]Attributes{resAttrs("get", "", "pods", "", "p"), resAttrs("get", "", "pods", "status", "p")}},
		{"bare resource is not its subresources",
			rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods"}},
			[]Attributes{resAttrs("get", "", "pods", "", "p")},
			[]Attributes{resAttrs("get", "", "pods", "log", "p")}},
		{"*/subresource in any resource",
			rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{"*"}, Resources: []string{"*/scale"}},
			[]Attributes{resAttrs("get", "apps", "deployments", "scale", ""), resAttrs("get", "", "replicationcontrollers", "scale", "")},
			[]Attributes{resAttrs("get", "apps", "deployments", "", ""), resAttrs("get", "apps", "deployments", "status", "")}},
		{"res/* is no wildcard upstream: only a subresource named *",
			rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods/*"}},
			[]Attributes{resAttrs("get", "", "pods", "*", "")},
			[]Attributes{resAttrs("get", "", "pods", "log", ""), resAttrs("get", "", "pods", "", "")}},
		{"resource names",
			rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{"foo"}},
			[]Attributes{resAttrs("get", "", "configmaps", "", "foo")},
			[]Attributes{resAttrs("get", "", "configmaps", "", "bar"), resAttrs("list", "", "configmaps", "", "")}},
	}
	for _, tc := range tests {
		for _, a := range tc.pass {
			if !RuleAllows(a, &tc.rule) {
				t.Errorf("%s: %+v should match", tc.name, describe(a))
			}
		}
		for _, a := range tc.fail {
			if RuleAllows(a, &tc.rule) {
				t.Errorf("%s: %+v should not match", tc.name, describe(a))
			}
		}
	}
}

func describe(a Attributes) string {
	if !a.IsResourceRequest() {
		return a.Verb + " " + a.Path
	}
	return a.Verb + " " + a.Resource.GVK.Group + "/" + a.Resource.Plural + "/" + a.Subresource + " " + a.Name
}

// fakeRBAC is an in-memory RBACReader.
type fakeRBAC struct {
	roles    []*rbacv1.Role
	cluster  []*rbacv1.ClusterRole
	rbs      []*rbacv1.RoleBinding
	crbs     []*rbacv1.ClusterRoleBinding
	listErrs error
}

func (f *fakeRBAC) GetRole(_ context.Context, ns, name string) (*rbacv1.Role, error) {
	for _, r := range f.roles {
		if r.Namespace == ns && r.Name == name {
			return r, nil
		}
	}
	return nil, apierrors.NewNotFound(rbacv1.Resource("role"), name)
}

func (f *fakeRBAC) GetClusterRole(_ context.Context, name string) (*rbacv1.ClusterRole, error) {
	for _, r := range f.cluster {
		if r.Name == name {
			return r, nil
		}
	}
	return nil, apierrors.NewNotFound(rbacv1.Resource("clusterrole"), name)
}

func (f *fakeRBAC) ListRoleBindings(_ context.Context, ns string) ([]*rbacv1.RoleBinding, error) {
	var out []*rbacv1.RoleBinding
	for _, b := range f.rbs {
		if b.Namespace == ns {
			out = append(out, b)
		}
	}
	return out, f.listErrs
}

func (f *fakeRBAC) ListClusterRoleBindings(context.Context) ([]*rbacv1.ClusterRoleBinding, error) {
	return f.crbs, f.listErrs
}

func om(ns, name string) metav1.ObjectMeta { return metav1.ObjectMeta{Namespace: ns, Name: name} }

var (
	podReader = []rbacv1.PolicyRule{{Verbs: []string{"get", "list", "watch"}, APIGroups: []string{""}, Resources: []string{"pods"}}}
	saAlice   = request.User{Name: "system:serviceaccount:ns1:alice", Groups: []string{"system:serviceaccounts", "system:serviceaccounts:ns1", "system:authenticated"}}
	saSubject = rbacv1.Subject{Kind: "ServiceAccount", Name: "alice"}
)

func TestRBACAuthorizer(t *testing.T) {
	f := &fakeRBAC{
		roles:   []*rbacv1.Role{{ObjectMeta: om("ns1", "pod-reader"), Rules: podReader}},
		cluster: []*rbacv1.ClusterRole{{ObjectMeta: om("", "view"), Rules: []rbacv1.PolicyRule{{Verbs: []string{"list"}, APIGroups: []string{""}, Resources: []string{"configmaps"}}}}},
		rbs: []*rbacv1.RoleBinding{
			// A service account subject without namespace is the binding's.
			{ObjectMeta: om("ns1", "read-pods"), RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "pod-reader"}, Subjects: []rbacv1.Subject{saSubject}},
			{ObjectMeta: om("ns2", "view"), RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"}, Subjects: []rbacv1.Subject{{Kind: "Group", Name: "system:serviceaccounts:ns1"}}},
			{ObjectMeta: om("ns3", "missing"), RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "gone"}, Subjects: []rbacv1.Subject{{Kind: "User", Name: saAlice.Name}}},
		},
		crbs: []*rbacv1.ClusterRoleBinding{
			{ObjectMeta: om("", "bob-view"), RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"}, Subjects: []rbacv1.Subject{{Kind: "User", Name: "bob"}}},
		},
	}
	z := &RBACAuthorizer{Reader: f}
	bob := request.User{Name: "bob"}
	tests := []struct {
		name   string
		a      Attributes
		want   Decision
		reason string
	}{
		{"role binding in its namespace", Attributes{User: saAlice, Verb: "list", Resource: res("", "pods", true), Namespace: "ns1"}, DecisionAllow,
			`RBAC: allowed by RoleBinding "read-pods/ns1" of Role "pod-reader" to ServiceAccount "alice/ns1"`},
		{"not in another namespace", Attributes{User: saAlice, Verb: "list", Resource: res("", "pods", true), Namespace: "ns4"}, DecisionNoOpinion, ""},
		{"not cluster-wide", Attributes{User: saAlice, Verb: "list", Resource: res("", "pods", true)}, DecisionNoOpinion, ""},
		{"group subject, binding to a cluster role", Attributes{User: saAlice, Verb: "list", Resource: res("", "configmaps", true), Namespace: "ns2"}, DecisionAllow,
			`RBAC: allowed by RoleBinding "view/ns2" of ClusterRole "view" to Group "system:serviceaccounts:ns1"`},
		{"cluster role binding everywhere", Attributes{User: bob, Verb: "list", Resource: res("", "configmaps", true), Namespace: "ns9"}, DecisionAllow,
			`RBAC: allowed by ClusterRoleBinding "bob-view" of ClusterRole "view" to User "bob"`},
		{"cluster role binding at the cluster scope", Attributes{User: bob, Verb: "list", Resource: res("", "configmaps", true)}, DecisionAllow,
			`RBAC: allowed by ClusterRoleBinding "bob-view" of ClusterRole "view" to User "bob"`},
		{"verb not granted", Attributes{User: bob, Verb: "delete", Resource: res("", "configmaps", true), Namespace: "ns9"}, DecisionNoOpinion, ""},
		{"a missing role is the reason", Attributes{User: saAlice, Verb: "get", Resource: res("", "pods", true), Namespace: "ns3"}, DecisionNoOpinion,
			`RBAC: clusterrole.rbac.authorization.k8s.io "gone" not found`},
	}
	for _, tc := range tests {
		d, reason, err := z.Authorize(context.Background(), tc.a)
		if d != tc.want || reason != tc.reason || err != nil {
			t.Errorf("%s: got %v %q %v, want %v %q", tc.name, d, reason, err, tc.want, tc.reason)
		}
	}
	// The chain's Forbidden carries the reason, as upstream.
	a := tests[len(tests)-1].a
	err := Check(context.Background(), New(Data{RBAC: f}), a)
	want := `pods is forbidden: User "system:serviceaccount:ns1:alice" cannot get resource "pods" in API group "" in the namespace "ns3": RBAC: clusterrole.rbac.authorization.k8s.io "gone" not found`
	if err == nil || err.Error() != want {
		t.Errorf("Check: got %v\nwant %s", err, want)
	}
}

func TestEscalation(t *testing.T) {
	f := &fakeRBAC{
		roles: []*rbacv1.Role{{ObjectMeta: om("ns1", "pod-reader"), Rules: podReader}},
		cluster: []*rbacv1.ClusterRole{
			{ObjectMeta: om("", "role-escalator"), Rules: []rbacv1.PolicyRule{{Verbs: []string{"create", "escalate"}, APIGroups: []string{rbacv1.GroupName}, Resources: []string{"roles"}}}},
			{ObjectMeta: om("", "admin-binder"), Rules: []rbacv1.PolicyRule{{Verbs: []string{"bind"}, APIGroups: []string{rbacv1.GroupName}, Resources: []string{"clusterroles"}, ResourceNames: []string{"admin"}}}},
			{ObjectMeta: om("", "admin"), Rules: []rbacv1.PolicyRule{{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}}}},
		},
		rbs: []*rbacv1.RoleBinding{{ObjectMeta: om("ns1", "read-pods"), RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "pod-reader"}, Subjects: []rbacv1.Subject{saSubject}}},
	}
	chain := New(Data{RBAC: f})
	e := Escalation{Authorizer: chain, Rules: chain.RBAC(), Resource: func(p string) *registry.Resource { return res(rbacv1.GroupName, p, p == "roles") }}
	ctx := context.Background()
	role := func(rules ...rbacv1.PolicyRule) *rbacv1.Role {
		return &rbacv1.Role{ObjectMeta: om("ns1", "r"), Rules: rules}
	}
	podWriter := rbacv1.PolicyRule{Verbs: []string{"get", "create", "delete"}, APIGroups: []string{""}, Resources: []string{"pods"}}

	if err := e.ConfirmWrite(ctx, saAlice, "ns1", role(podReader...), nil); err != nil {
		t.Errorf("a role within one's rights: %v", err)
	}
	err := e.ConfirmWrite(ctx, saAlice, "ns1", role(podWriter, rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"secrets"}}), nil)
	want := `roles.rbac.authorization.k8s.io "r" is forbidden: user "system:serviceaccount:ns1:alice" (groups=["system:serviceaccounts" "system:serviceaccounts:ns1" "system:authenticated"]) is attempting to grant RBAC permissions not currently held:
{APIGroups:[""], Resources:["pods"], Verbs:["create" "delete"]}
{APIGroups:[""], Resources:["secrets"], Verbs:["get"]}`
	if !apierrors.IsForbidden(err) || err.Error() != want {
		t.Errorf("escalating role: got %v\nwant %s", err, want)
	}
	if err := e.ConfirmWrite(ctx, saAlice, "ns2", role(podReader...), nil); err == nil {
		t.Errorf("rights held in ns1 only must not cover a role in ns2")
	}
	if err := e.ConfirmWrite(ctx, request.User{Name: "root", Groups: []string{MastersGroup}}, "ns1", role(podWriter), nil); err != nil {
		t.Errorf("system:masters: %v", err)
	}

	// escalate on roles lets one write any rules.
	f.crbs = append(f.crbs, &rbacv1.ClusterRoleBinding{ObjectMeta: om("", "esc"), RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "role-escalator"}, Subjects: []rbacv1.Subject{{Kind: "User", Name: "carol"}}})
	if err := e.ConfirmWrite(ctx, request.User{Name: "carol"}, "ns1", role(podWriter), nil); err != nil {
		t.Errorf("escalate: %v", err)
	}

	// Bindings: the role's rules must be held, or bind on the role.
	binding := func(kind, name string) *rbacv1.RoleBinding {
		return &rbacv1.RoleBinding{ObjectMeta: om("ns1", "b"), RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: kind, Name: name}}
	}
	if err := e.ConfirmWrite(ctx, saAlice, "ns1", binding("Role", "pod-reader"), nil); err != nil {
		t.Errorf("binding a role within one's rights: %v", err)
	}
	if err := e.ConfirmWrite(ctx, saAlice, "ns1", binding("ClusterRole", "admin"), nil); !apierrors.IsForbidden(err) ||
		!strings.Contains(err.Error(), `rolebindings.rbac.authorization.k8s.io "b" is forbidden: user "system:serviceaccount:ns1:alice"`) ||
		!strings.Contains(err.Error(), `{APIGroups:["*"], Resources:["*"], Verbs:["*"]}`) {
		t.Errorf("binding admin: %v", err)
	}
	if err := e.ConfirmWrite(ctx, saAlice, "ns1", binding("ClusterRole", "gone"), nil); err == nil ||
		err.Error() != `rolebindings.rbac.authorization.k8s.io "b" is forbidden: clusterrole.rbac.authorization.k8s.io "gone" not found` {
		t.Errorf("binding a missing role: %v", err)
	}
	f.crbs = append(f.crbs, &rbacv1.ClusterRoleBinding{ObjectMeta: om("", "binder"), RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "admin-binder"}, Subjects: []rbacv1.Subject{{Kind: "User", Name: "dave"}}})
	if err := e.ConfirmWrite(ctx, request.User{Name: "dave"}, "ns1", binding("ClusterRole", "admin"), nil); err != nil {
		t.Errorf("bind on admin: %v", err)
	}

	// An aggregationRule needs full authority, even with every rule held.
	agg := &rbacv1.ClusterRole{ObjectMeta: om("", "agg"), AggregationRule: &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{"a": "b"}}}}}
	if err := e.ConfirmWrite(ctx, saAlice, "", agg, nil); err == nil ||
		err.Error() != `clusterroles.rbac.authorization.k8s.io "agg" is forbidden: must have cluster-admin privileges to use the aggregationRule` {
		t.Errorf("aggregationRule: %v", err)
	}

	// An update of the garbage collector's fields only is not checked.
	old := role(podWriter)
	upd := old.DeepCopy()
	upd.Finalizers = []string{"x"}
	if err := e.ConfirmWrite(ctx, saAlice, "ns1", upd, old); err != nil {
		t.Errorf("GC-only update: %v", err)
	}
}

func TestCompactRules(t *testing.T) {
	in := []rbacv1.PolicyRule{
		{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods"}},
		{Verbs: []string{"list"}, APIGroups: []string{""}, Resources: []string{"pods"}},
		{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods"}, ResourceNames: []string{"p"}},
		{Verbs: []string{"get"}, NonResourceURLs: []string{"/x"}},
	}
	var got []string
	for _, r := range CompactRules(in) {
		got = append(got, CompactString(r))
	}
	want := `{APIGroups:[""], Resources:["pods"], Verbs:["get" "list"]}|{APIGroups:[""], Resources:["pods"], ResourceNames:["p"], Verbs:["get"]}|{NonResourceURLs:["/x"], Verbs:["get"]}`
	if strings.Join(got, "|") != want {
		t.Errorf("got %s\nwant %s", strings.Join(got, "|"), want)
	}
}

func TestChainRulesFor(t *testing.T) {
	f := &fakeRBAC{roles: []*rbacv1.Role{{ObjectMeta: om("ns1", "pod-reader"), Rules: podReader}},
		rbs: []*rbacv1.RoleBinding{{ObjectMeta: om("ns1", "read-pods"), RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "pod-reader"}, Subjects: []rbacv1.Subject{saSubject}}}}
	c := New(Data{RBAC: f})
	got := c.RulesFor(context.Background(), saAlice, "ns1")
	if len(got.Rules) != 1 || got.Incomplete || got.Err != nil {
		t.Errorf("service account: %+v", got)
	}
	got = c.RulesFor(context.Background(), request.User{Name: "root", Groups: []string{MastersGroup}}, "ns1")
	if len(got.Rules) != 0 || got.Incomplete || got.Err != nil { // no binding to cluster-admin here
		t.Errorf("masters: %+v", got)
	}
	got = c.RulesFor(context.Background(), request.User{Name: "system:node:n1", Groups: []string{NodesGroup}}, "ns1")
	if !got.Incomplete || got.Err == nil || got.Err.Error() != "node authorizer does not support user rule resolution" {
		t.Errorf("node: %+v", got)
	}
}
