package clusterroleaggregation

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/component-helpers/auth/rbac/validation"

	"github.com/nodeagent/nodeagent/pkg/controlplane/controller/internal/ctrltest"
	"github.com/nodeagent/nodeagent/pkg/controlplane/rbacpolicy"
)

const viewLabel = "rbac.authorization.k8s.io/aggregate-to-view"

func rule(verb, resource string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{Verbs: []string{verb}, APIGroups: []string{""}, Resources: []string{resource}}
}

func labelled(name string, lbls map[string]string, rules ...rbacv1.PolicyRule) *rbacv1.ClusterRole {
	return &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: lbls}, Rules: rules}
}

func aggregating(name string, selectors ...map[string]string) *rbacv1.ClusterRole {
	r := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, AggregationRule: &rbacv1.AggregationRule{}}
	for _, s := range selectors {
		r.AggregationRule.ClusterRoleSelectors = append(r.AggregationRule.ClusterRoleSelectors, metav1.LabelSelector{MatchLabels: s})
	}
	return r
}

// lister lists roles as the informer's lister does.
func lister(roles ...*rbacv1.ClusterRole) func(labels.Selector) ([]*rbacv1.ClusterRole, error) {
	return func(sel labels.Selector) ([]*rbacv1.ClusterRole, error) {
		var out []*rbacv1.ClusterRole
		for _, r := range roles {
			if sel.Matches(labels.Set(r.Labels)) {
				out = append(out, r)
			}
		}
		return out, nil
	}
}

// TestAggregate: per selector in name order, the role itself skipped,
// equal rules once (a covered but different rule stays).
func TestAggregate(t *testing.T) {
	a := map[string]string{"a": "true"}
	b := map[string]string{"b": "true"}
	self := aggregating("self", a, b)
	self.Labels = a
	self.Rules = []rbacv1.PolicyRule{rule("delete", "stale")}
	wide := rbacv1.PolicyRule{Verbs: []string{"get", "list"}, APIGroups: []string{""}, Resources: []string{"pods"}}
	roles := []*rbacv1.ClusterRole{
		self,
		labelled("zeta", a, rule("get", "pods"), rule("get", "secrets")),
		labelled("alpha", a, rule("get", "pods"), wide),
		labelled("beta", b, rule("get", "secrets"), rule("watch", "nodes")),
		labelled("other", map[string]string{"c": "true"}, rule("get", "configmaps")),
	}
	got, err := Aggregate(self, lister(roles...))
	if err != nil {
		t.Fatal(err)
	}
	want := []rbacv1.PolicyRule{rule("get", "pods"), wide, rule("get", "secrets"), rule("watch", "nodes")}
	if !equality.Semantic.DeepEqual(got, want) {
		t.Errorf("aggregated rules\n got %v\nwant %v", got, want)
	}

	none, err := Aggregate(aggregating("empty", map[string]string{"nobody": "true"}), lister(roles...))
	if err != nil || !equality.Semantic.DeepEqual(none, []rbacv1.PolicyRule(nil)) {
		t.Errorf("nothing matched: %v %v (must equal a role without rules)", none, err)
	}
	bad := aggregating("bad")
	bad.AggregationRule.ClusterRoleSelectors = []metav1.LabelSelector{{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "k", Operator: "Bogus"}}}}
	if _, err := Aggregate(bad, lister(roles...)); err == nil {
		t.Error("an invalid selector aggregated")
	}
}

func start(t *testing.T, client kubernetes.Interface) {
	t.Helper()
	f := informers.NewSharedInformerFactory(client, 0)
	c := New(client, f, ctrltest.Logger(t))
	ctrltest.Start(t, f, func(ctx context.Context) error { return c.Run(ctx, Workers) })
}

// covers reports whether role's rules grant exactly-or-more than want.
func covers(ctx context.Context, c kubernetes.Interface, role string, want ...rbacv1.PolicyRule) (bool, string) {
	r, err := c.RbacV1().ClusterRoles().Get(ctx, role, metav1.GetOptions{})
	if err != nil {
		return false, err.Error()
	}
	ok, missing := validation.Covers(r.Rules, want)
	return ok, fmt.Sprintf("%s has %d rules, misses %v", role, len(r.Rules), missing)
}

func lacks(ctx context.Context, c kubernetes.Interface, role string, r rbacv1.PolicyRule) (bool, string) {
	ok, s := covers(ctx, c, role, r)
	return !ok, s
}

// TestAggregationScenario: the bootstrap admin, edit and view take in the
// system:aggregate-to-* roles; a user's role labelled aggregate-to-view
// reaches view, edit and admin, and its changes and deletion follow.
func TestAggregationScenario(t *testing.T) {
	var objs []runtime.Object
	for _, r := range rbacpolicy.Default().ClusterRoles {
		objs = append(objs, &r)
	}
	client := ctrltest.NewClientset(objs...)
	start(t, client)

	view := rule("get", "pods")
	edit := rule("create", "pods/exec")
	admin := rbacv1.PolicyRule{Verbs: []string{"create"}, APIGroups: []string{"rbac.authorization.k8s.io"}, Resources: []string{"rolebindings"}}
	eventually := func(what string, f func(context.Context) (bool, string)) { ctrltest.Eventually(t, what, f) }
	check := func(role string, rs ...rbacv1.PolicyRule) func(context.Context) (bool, string) {
		return func(ctx context.Context) (bool, string) { return covers(ctx, client, role, rs...) }
	}
	eventually("view aggregated", check(rbacpolicy.View, view))
	eventually("edit aggregated, view's rules included", check(rbacpolicy.Edit, view, edit))
	eventually("admin aggregated, edit's and view's included", check(rbacpolicy.Admin, view, edit, admin))
	if ok, s := covers(t.Context(), client, rbacpolicy.View, rule("get", "secrets")); ok {
		t.Errorf("view reads secrets: %s", s)
	}

	widgets := rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{"example.com"}, Resources: []string{"widgets"}}
	mine := labelled("widget-viewer", map[string]string{viewLabel: "true"}, widgets)
	roles := client.RbacV1().ClusterRoles()
	if _, err := roles.Create(t.Context(), mine, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, r := range []string{rbacpolicy.View, rbacpolicy.Edit, rbacpolicy.Admin} {
		eventually("a labelled role reaches "+r, check(r, widgets, view))
	}

	gadgets := rbacv1.PolicyRule{Verbs: []string{"list"}, APIGroups: []string{"example.com"}, Resources: []string{"gadgets"}}
	mine, _ = roles.Get(t.Context(), "widget-viewer", metav1.GetOptions{})
	mine.Rules = []rbacv1.PolicyRule{gadgets}
	if _, err := roles.Update(t.Context(), mine, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually("a changed rule reaches admin", check(rbacpolicy.Admin, gadgets))
	eventually("the old rule leaves admin", func(ctx context.Context) (bool, string) { return lacks(ctx, client, rbacpolicy.Admin, widgets) })

	if err := roles.Delete(t.Context(), "widget-viewer", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually("a deleted role's rules leave view", func(ctx context.Context) (bool, string) { return lacks(ctx, client, rbacpolicy.View, gadgets) })
}

// TestAggregationWithoutApply: where the server refuses apply patches
// (415), the rules are written by an update; an unchanged role is not
// written at all.
func TestAggregationWithoutApply(t *testing.T) {
	lbl := map[string]string{"x": "true"}
	done := aggregating("done", lbl)
	done.Rules = []rbacv1.PolicyRule{rule("get", "pods")}
	client := ctrltest.NewClientset(aggregating("agg", lbl), done, labelled("part", lbl, rule("get", "pods")))
	client.PrependReactor("patch", "clusterroles", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.(k8stesting.PatchAction).GetPatchType() == types.ApplyPatchType {
			return true, nil, apierrors.NewGenericServerResponse(http.StatusUnsupportedMediaType, "patch",
				rbacv1.Resource("clusterroles"), "", "the server does not support the patch type application/apply-patch+yaml", 0, false)
		}
		return false, nil, nil
	})
	start(t, client)
	ctrltest.Eventually(t, "agg updated", func(ctx context.Context) (bool, string) {
		return covers(ctx, client, "agg", rule("get", "pods"))
	})
	for _, a := range client.Actions() {
		if u, ok := a.(k8stesting.UpdateAction); ok && u.GetObject().(*rbacv1.ClusterRole).Name == "done" {
			t.Errorf("a role with the aggregated rules already was written: %v", a)
		}
	}
}

// TestAggregationApplies: a server with apply gets the rules as the
// controller's field manager.
func TestAggregationApplies(t *testing.T) {
	lbl := map[string]string{"x": "true"}
	client := fake.NewClientset(aggregating("agg", lbl), labelled("part", lbl, rule("get", "pods")))
	start(t, client)
	ctrltest.Eventually(t, "agg applied", func(ctx context.Context) (bool, string) {
		return covers(ctx, client, "agg", rule("get", "pods"))
	})
	var applied bool
	for _, a := range client.Actions() {
		if p, ok := a.(k8stesting.PatchAction); ok && p.GetPatchType() == types.ApplyPatchType {
			applied = true
		}
	}
	if !applied {
		t.Error("no apply patch sent")
	}
}
