package registry

import (
	"slices"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func rbacRes(t *testing.T, plural string) *Resource {
	t.Helper()
	r := testRegistry.Get(rbacv1.GroupName, "v1", plural)
	if r == nil || len(r.ShortNames) != 0 || len(r.Categories) != 0 {
		t.Fatalf("%s: %+v (served, no short names or categories, as upstream)", plural, r)
	}
	return r
}

func TestRoleValidation(t *testing.T) {
	roles, clusterRoles := rbacRes(t, "roles"), rbacRes(t, "clusterroles")
	rule := rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods"}}
	urls := rbacv1.PolicyRule{Verbs: []string{"get"}, NonResourceURLs: []string{"/healthz"}}
	role := func(rules ...rbacv1.PolicyRule) *rbacv1.Role {
		return &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "r:1", Namespace: "ns"}, Rules: rules}
	}
	cr := func(rules ...rbacv1.PolicyRule) *rbacv1.ClusterRole {
		return &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "system:r"}, Rules: rules}
	}
	expectErrors(t, "valid role (any path segment name)", roles.Validate(role(rule)))
	expectErrors(t, "valid cluster role with URLs", clusterRoles.Validate(cr(rule, urls)))
	expectErrors(t, "no verbs", roles.Validate(role(rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods"}})), "FieldValueRequired rules[0].verbs")
	expectErrors(t, "no groups or resources", roles.Validate(role(rbacv1.PolicyRule{Verbs: []string{"get"}})),
		"FieldValueRequired rules[0].apiGroups", "FieldValueRequired rules[0].resources")
	expectErrors(t, "URLs in a role", roles.Validate(role(urls)), "FieldValueInvalid rules[0].nonResourceURLs")
	both := urls
	both.Resources = []string{"pods"}
	expectErrors(t, "URLs and resources", clusterRoles.Validate(cr(both)), "FieldValueInvalid rules[0].nonResourceURLs")
	bad := role(rule)
	bad.Name = "a/b"
	expectErrors(t, "name with a slash", roles.Validate(bad), "FieldValueInvalid metadata.name")

	agg := cr()
	agg.AggregationRule = &rbacv1.AggregationRule{}
	expectErrors(t, "empty aggregationRule", clusterRoles.Validate(agg), "FieldValueRequired aggregationRule.clusterRoleSelectors")
	agg.AggregationRule.ClusterRoleSelectors = []metav1.LabelSelector{{MatchLabels: map[string]string{"-x": "y"}}}
	expectErrors(t, "bad selector", clusterRoles.Validate(agg), "FieldValueInvalid aggregationRule.clusterRoleSelectors[0].matchLabels", "FieldValueInvalid aggregationRule.clusterRoleSelectors[0]")
}

func TestBindingValidation(t *testing.T) {
	rbs, crbs := rbacRes(t, "rolebindings"), rbacRes(t, "clusterrolebindings")
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: "ns"},
		RoleRef:  rbacv1.RoleRef{Kind: "Role", Name: "r"},
		Subjects: []rbacv1.Subject{{Kind: "User", Name: "u"}, {Kind: "Group", Name: "g"}, {Kind: "ServiceAccount", Name: "sa"}}}
	rbs.Default(rb)
	if rb.RoleRef.APIGroup != rbacv1.GroupName || rb.Subjects[0].APIGroup != rbacv1.GroupName || rb.Subjects[1].APIGroup != rbacv1.GroupName || rb.Subjects[2].APIGroup != "" {
		t.Errorf("defaults: %+v", rb)
	}
	expectErrors(t, "valid binding", rbs.Validate(rb))

	tests := []struct {
		name   string
		mutate func(*rbacv1.RoleBinding)
		want   []string
	}{
		{"unknown kind", func(b *rbacv1.RoleBinding) { b.RoleRef.Kind = "Policy" }, []string{"FieldValueNotSupported roleRef.kind"}},
		{"other group", func(b *rbacv1.RoleBinding) { b.RoleRef.APIGroup = "x" }, []string{"FieldValueNotSupported roleRef.apiGroup"}},
		{"no role name", func(b *rbacv1.RoleBinding) { b.RoleRef.Name = "" }, []string{"FieldValueRequired roleRef.name"}},
		{"subject without name", func(b *rbacv1.RoleBinding) { b.Subjects[0].Name = "" }, []string{"FieldValueRequired subjects[0].name"}},
		{"unknown subject kind", func(b *rbacv1.RoleBinding) { b.Subjects[0].Kind = "Robot" }, []string{"FieldValueNotSupported subjects[0].kind"}},
		{"service account with a group", func(b *rbacv1.RoleBinding) { b.Subjects[2].APIGroup = rbacv1.GroupName }, []string{"FieldValueNotSupported subjects[2].apiGroup"}},
		{"service account name", func(b *rbacv1.RoleBinding) { b.Subjects[2].Name = "SA" }, []string{"FieldValueInvalid subjects[2].name"}},
		{"user in the core group", func(b *rbacv1.RoleBinding) { b.Subjects[0].APIGroup = "" }, []string{"FieldValueNotSupported subjects[0].apiGroup"}},
	}
	for _, tc := range tests {
		b := rb.DeepCopy()
		tc.mutate(b)
		expectErrors(t, tc.name, rbs.Validate(b), tc.want...)
	}

	rb.ResourceVersion = "1"
	changed := rb.DeepCopy()
	changed.RoleRef.Name = "other"
	errs := rbs.ValidateUpdate(changed, rb)
	expectErrors(t, "roleRef change", errs, "FieldValueInvalid roleRef")
	if len(errs) == 1 && errs[0].Detail != "cannot change roleRef" {
		t.Errorf("roleRef change: %q", errs[0].Detail)
	}

	crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "b"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "r"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "sa"}}}
	expectErrors(t, "cluster role binding", crbs.Validate(crb), "FieldValueNotSupported roleRef.kind", "FieldValueRequired subjects[0].namespace")
}

func TestRBACTables(t *testing.T) {
	now, reg := fixedNow(t)
	created := metav1.NewTime(now.Add(-time.Minute))
	cols, cells := rows(t, reg.Get(rbacv1.GroupName, "v1", "clusterroles"), true, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "view", CreationTimestamp: created}})
	if !slices.Equal(cols, []string{"Name", "Created At"}) || !slices.Equal(cells[0], []interface{}{"view", created.UTC().Format(time.RFC3339)}) {
		t.Errorf("cluster role: %q %v", cols, cells)
	}
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: "ns", CreationTimestamp: created},
		RoleRef: rbacv1.RoleRef{Kind: "ClusterRole", Name: "view"},
		Subjects: []rbacv1.Subject{{Kind: "User", Name: "u1"}, {Kind: "User", Name: "u2"}, {Kind: "Group", Name: "g"},
			{Kind: "ServiceAccount", Name: "sa", Namespace: "ns"}}}
	cols, cells = rows(t, reg.Get(rbacv1.GroupName, "v1", "rolebindings"), true, rb)
	if !slices.Equal(cols, []string{"Name", "Role", "Age", "Users", "Groups", "ServiceAccounts"}) ||
		!slices.Equal(cells[0], []interface{}{"b", "ClusterRole/view", "60s", "u1, u2", "g", "ns/sa"}) {
		t.Errorf("role binding: %q %v", cols, cells)
	}
	cols, _ = rows(t, reg.Get(rbacv1.GroupName, "v1", "clusterrolebindings"), false, &rbacv1.ClusterRoleBinding{})
	if !slices.Equal(cols, []string{"Name", "Role", "Age"}) {
		t.Errorf("cluster role binding, not wide: %q", cols)
	}
}
