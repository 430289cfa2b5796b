package rbacpolicy

import (
	"slices"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/component-helpers/auth/rbac/validation"
)

func findClusterRole(t *testing.T, p Policy, name string) rbacv1.ClusterRole {
	t.Helper()
	for _, r := range p.ClusterRoles {
		if r.Name == name {
			return r
		}
	}
	t.Fatalf("no cluster role %s", name)
	return rbacv1.ClusterRole{}
}

// aggregated is what the aggregation controller makes of role: the rules
// of the roles its selectors match, recursively through aggregated ones.
func aggregated(t *testing.T, p Policy, name string) []rbacv1.PolicyRule {
	t.Helper()
	r := findClusterRole(t, p, name)
	if r.AggregationRule == nil {
		return r.Rules
	}
	var out []rbacv1.PolicyRule
	for _, s := range r.AggregationRule.ClusterRoleSelectors {
		sel, err := metav1.LabelSelectorAsSelector(&s)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range p.ClusterRoles {
			if c.Name != name && sel.Matches(labels.Set(c.Labels)) {
				out = append(out, aggregated(t, p, c.Name)...)
			}
		}
	}
	return out
}

func rule(verb, group, resource string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{Verbs: []string{verb}, APIGroups: []string{group}, Resources: []string{resource}}
}

// TestPolicyFacts spot-checks upstream's policy.
func TestPolicyFacts(t *testing.T) {
	p := Default()
	allows := func(role string, r rbacv1.PolicyRule) bool {
		ok, _ := validation.Covers(aggregated(t, p, role), []rbacv1.PolicyRule{r})
		return ok
	}
	for _, c := range []struct {
		role string
		rule rbacv1.PolicyRule
		want bool
	}{
		{View, rule("get", "", "pods"), true},
		{View, rule("list", "apps", "deployments"), true},
		{View, rule("get", "", "secrets"), false},
		{View, rule("create", "", "pods/exec"), false},
		{Edit, rule("create", "apps", "deployments"), true},
		{Edit, rule("get", "", "secrets"), true},
		{Edit, rule("create", "", "pods/exec"), true},
		{Edit, rule("get", "", "pods/log"), true}, // through view
		{Edit, rule("create", "rbac.authorization.k8s.io", "roles"), false},
		{Edit, rule("create", "rbac.authorization.k8s.io", "rolebindings"), false},
		{Edit, rule("update", "", "resourcequotas"), false},
		{Edit, rule("create", "", "endpoints"), false}, // CVE-2021-25740
		{Admin, rule("create", "rbac.authorization.k8s.io", "rolebindings"), true},
		{Admin, rule("delete", "", "pods"), true}, // through edit
		{Admin, rule("create", "rbac.authorization.k8s.io", "clusterroles"), false},
		{ClusterAdmin, rule("escalate", "anything.example.com", "widgets"), true},
		// what the node authorizer's users (kubelets) ask for
		{SystemNode, rule("create", "", "nodes"), true},
		{SystemNode, rule("patch", "", "nodes/status"), true},
		{SystemNode, rule("update", "", "pods/status"), true},
		{SystemNode, rule("create", "", "pods"), true}, // mirror pods
		{SystemNode, rule("delete", "", "pods"), true},
		{SystemNode, rule("create", "", "pods/eviction"), true},
		{SystemNode, rule("watch", "", "secrets"), true},
		{SystemNode, rule("get", "", "configmaps"), true},
		{SystemNode, rule("get", "", "persistentvolumeclaims"), true},
		{SystemNode, rule("create", "", "serviceaccounts/token"), true},
		{SystemNode, rule("get", "", "serviceaccounts"), true},
		{SystemNode, rule("update", "coordination.k8s.io", "leases"), true},
		{SystemNode, rule("create", "certificates.k8s.io", "certificatesigningrequests"), true},
		{SystemNode, rule("list", "node.k8s.io", "runtimeclasses"), true},
		{SystemNode, rule("create", "", "events"), true},
		{SystemNode, rule("get", "resource.k8s.io", "resourceclaims"), true},
		{SystemNode, rule("delete", "", "nodes"), false},
		{SystemNode, rule("create", "", "secrets"), false},
		{SystemKubeScheduler, rule("create", "", "pods/binding"), true},
		{SystemKubeScheduler, rule("delete", "", "pods"), true},
		{SystemKubeScheduler, rule("create", "", "pods"), false},
		{"system:node-proxier", rule("watch", "discovery.k8s.io", "endpointslices"), true},
		{"system:basic-user", rule("create", "authorization.k8s.io", "selfsubjectaccessreviews"), true},
		{"system:controller:clusterrole-aggregation-controller", rule("escalate", "rbac.authorization.k8s.io", "clusterroles"), true},
	} {
		if got := allows(c.role, c.rule); got != c.want {
			t.Errorf("%s allows %s: %v, want %v", c.role, c.rule.String(), got, c.want)
		}
	}
	for _, c := range []struct {
		role string
		url  string
		want bool
	}{
		{"system:public-info-viewer", "/version", true},
		{"system:public-info-viewer", "/api", false},
		{"system:discovery", "/apis/apps/v1", true},
		{"system:monitoring", "/metrics", true},
		{"system:monitoring", "/readyz/etcd", true},
	} {
		r := rbacv1.PolicyRule{Verbs: []string{"get"}, NonResourceURLs: []string{c.url}}
		if got := allows(c.role, r); got != c.want {
			t.Errorf("%s allows GET %s: %v, want %v", c.role, c.url, got, c.want)
		}
	}
}

// TestPolicyShape: names are unique, every object carries the bootstrap
// metadata, every rule's lists are sorted, bindings name existing roles,
// and every controller role is bound to its service account.
func TestPolicyShape(t *testing.T) {
	p := Default()
	seen := map[string]bool{}
	checkMeta := func(kind string, m metav1.ObjectMeta) {
		key := kind + "/" + m.Namespace + "/" + m.Name
		if seen[key] {
			t.Errorf("duplicate %s", key)
		}
		seen[key] = true
		if m.Labels[BootstrappingLabel] != BootstrappingValue || m.Annotations[AutoUpdateAnnotation] != "true" {
			t.Errorf("%s metadata: %v %v", key, m.Labels, m.Annotations)
		}
	}
	checkRules := func(name string, rs []rbacv1.PolicyRule) {
		for _, r := range rs {
			for _, l := range [][]string{r.Verbs, r.APIGroups, r.Resources, r.ResourceNames, r.NonResourceURLs} {
				if !slices.IsSorted(l) {
					t.Errorf("%s: unsorted rule %s", name, r.String())
				}
			}
		}
	}
	for _, r := range p.ClusterRoles {
		checkMeta("clusterrole", r.ObjectMeta)
		checkRules(r.Name, r.Rules)
	}
	for _, r := range p.Roles {
		checkMeta("role", r.ObjectMeta)
		checkRules(r.Name, r.Rules)
	}
	for _, b := range p.ClusterRoleBindings {
		checkMeta("clusterrolebinding", b.ObjectMeta)
		if !seen["clusterrole//"+b.RoleRef.Name] {
			t.Errorf("binding %s names no bootstrap role %s", b.Name, b.RoleRef.Name)
		}
		if sa, ok := strings.CutPrefix(b.Name, ControllerRolePrefix); ok {
			if len(b.Subjects) != 1 || b.Subjects[0] != serviceAccount("kube-system", sa) {
				t.Errorf("controller binding %s: %v", b.Name, b.Subjects)
			}
		}
	}
	for _, b := range p.RoleBindings {
		checkMeta("rolebinding", b.ObjectMeta)
		if !seen["role/"+b.Namespace+"/"+b.RoleRef.Name] {
			t.Errorf("binding %s/%s names no bootstrap role %s", b.Namespace, b.Name, b.RoleRef.Name)
		}
	}
	for _, r := range p.ClusterRoles {
		if strings.HasPrefix(r.Name, ControllerRolePrefix) && !seen["clusterrolebinding//"+r.Name] {
			t.Errorf("controller role %s has no binding", r.Name)
		}
	}
}
