package rbacpolicy

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/component-helpers/auth/rbac/validation"
)

func testLog(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// reconcileOK runs Reconcile against client and fails the test on error.
func reconcileOK(t *testing.T, client *fake.Clientset) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if err := reconcileEvery(ctx, client, testLog(t), time.Millisecond); err != nil {
		t.Fatal(err)
	}
}

// writes are the mutating actions the client saw.
func writes(c *fake.Clientset) []string {
	var out []string
	for _, a := range c.Actions() {
		switch a.GetVerb() {
		case "create", "update", "patch", "delete":
			out = append(out, a.GetVerb()+" "+a.GetResource().Resource+" "+a.GetNamespace())
		}
	}
	return out
}

// TestReconcileCreatesThePolicy: an empty cluster gets every object of
// the policy with its metadata, and the namespaces of the roles.
func TestReconcileCreatesThePolicy(t *testing.T) {
	client := fake.NewClientset()
	reconcileOK(t, client)
	ctx := t.Context()
	want := Default()

	crs, err := client.RbacV1().ClusterRoles().List(ctx, metav1.ListOptions{})
	if err != nil || len(crs.Items) != len(want.ClusterRoles) {
		t.Fatalf("cluster roles: %d of %d (%v)", len(crs.Items), len(want.ClusterRoles), err)
	}
	crbs, err := client.RbacV1().ClusterRoleBindings().List(ctx, metav1.ListOptions{})
	if err != nil || len(crbs.Items) != len(want.ClusterRoleBindings) {
		t.Fatalf("cluster role bindings: %d of %d (%v)", len(crbs.Items), len(want.ClusterRoleBindings), err)
	}
	roles, err := client.RbacV1().Roles("").List(ctx, metav1.ListOptions{})
	if err != nil || len(roles.Items) != len(want.Roles) {
		t.Fatalf("roles: %d of %d (%v)", len(roles.Items), len(want.Roles), err)
	}
	rbs, err := client.RbacV1().RoleBindings("").List(ctx, metav1.ListOptions{})
	if err != nil || len(rbs.Items) != len(want.RoleBindings) {
		t.Fatalf("role bindings: %d of %d (%v)", len(rbs.Items), len(want.RoleBindings), err)
	}
	for _, ns := range []string{"kube-system", "kube-public"} {
		if _, err := client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); err != nil {
			t.Errorf("namespace %s: %v", ns, err)
		}
	}
	admin, err := client.RbacV1().ClusterRoles().Get(ctx, Admin, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if admin.Labels[BootstrappingLabel] != BootstrappingValue || admin.Annotations[AutoUpdateAnnotation] != "true" ||
		admin.AggregationRule == nil || admin.AggregationRule.ClusterRoleSelectors[0].MatchLabels[aggregateToAdmin] != "true" {
		t.Errorf("admin as created: %+v", admin)
	}
}

// TestReconcileTwiceWritesNothing: a second start finds everything in
// place.
func TestReconcileTwiceWritesNothing(t *testing.T) {
	client := fake.NewClientset()
	reconcileOK(t, client)
	client.ClearActions()
	reconcileOK(t, client)
	if w := writes(client); len(w) > 0 {
		t.Errorf("second reconcile wrote %d times: %v", len(w), w[:min(len(w), 5)])
	}
}

// TestReconcileHonoursAutoUpdate: a role annotated autoupdate=false keeps
// a user's edits; one still on autoupdate=true gets the missing rules
// back and keeps the rules a user added. Bindings alike.
func TestReconcileHonoursAutoUpdate(t *testing.T) {
	client := fake.NewClientset()
	reconcileOK(t, client)
	ctx := t.Context()
	crs := client.RbacV1().ClusterRoles()
	extra := rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{"example.com"}, Resources: []string{"widgets"}}

	kept, _ := crs.Get(ctx, "system:kube-dns", metav1.GetOptions{})
	kept.Annotations[AutoUpdateAnnotation] = "false"
	kept.Rules = []rbacv1.PolicyRule{extra}
	mustUpdate(t, func() error { _, err := crs.Update(ctx, kept, metav1.UpdateOptions{}); return err })

	restored, _ := crs.Get(ctx, "system:heapster", metav1.GetOptions{})
	restored.Rules = []rbacv1.PolicyRule{extra}
	delete(restored.Labels, BootstrappingLabel)
	mustUpdate(t, func() error { _, err := crs.Update(ctx, restored, metav1.UpdateOptions{}); return err })

	crbs := client.RbacV1().ClusterRoleBindings()
	b, _ := crbs.Get(ctx, ClusterAdmin, metav1.GetOptions{})
	b.Subjects = []rbacv1.Subject{user("alice")}
	mustUpdate(t, func() error { _, err := crbs.Update(ctx, b, metav1.UpdateOptions{}); return err })
	moved, _ := crbs.Get(ctx, "system:kube-dns", metav1.GetOptions{})
	moved.RoleRef.Name = "view"
	mustUpdate(t, func() error { _, err := crbs.Update(ctx, moved, metav1.UpdateOptions{}); return err })

	reconcileOK(t, client)

	kept, _ = crs.Get(ctx, "system:kube-dns", metav1.GetOptions{})
	if len(kept.Rules) != 1 || kept.Rules[0].Resources[0] != "widgets" {
		t.Errorf("protected role changed: %v", kept.Rules)
	}
	// As upstream, the missing rules come back broken down to one verb
	// and resource each, after the user's.
	restored, _ = crs.Get(ctx, "system:heapster", metav1.GetOptions{})
	covers, missing := validation.Covers(restored.Rules, findClusterRole(t, Default(), "system:heapster").Rules)
	if !covers || restored.Rules[0].String() != extra.String() || restored.Labels[BootstrappingLabel] != BootstrappingValue {
		t.Errorf("role on autoupdate: rules %v labels %v; missing %v", restored.Rules, restored.Labels, missing)
	}
	b, _ = crbs.Get(ctx, ClusterAdmin, metav1.GetOptions{})
	if !slices.Equal(b.Subjects, []rbacv1.Subject{user("alice"), group("system:masters")}) {
		t.Errorf("cluster-admin subjects: %v", b.Subjects)
	}
	moved, _ = crbs.Get(ctx, "system:kube-dns", metav1.GetOptions{})
	if moved.RoleRef.Name != "system:kube-dns" {
		t.Errorf("binding with another roleRef not recreated: %v", moved.RoleRef)
	}
}

func mustUpdate(t *testing.T, f func() error) {
	t.Helper()
	if err := f(); err != nil {
		t.Fatal(err)
	}
}

// failFirst makes the first n calls of verb on resource fail with err.
func failFirst(c *fake.Clientset, verb, resource string, n int64, err error) *atomic.Int64 {
	var calls atomic.Int64
	c.PrependReactor(verb, resource, func(k8stesting.Action) (bool, runtime.Object, error) {
		if calls.Add(1) <= n {
			return true, nil, err
		}
		return false, nil, nil
	})
	return &calls
}

// TestReconcileWaitsForTheAPI: while the role storage does not answer,
// passes are retried; a write that is refused once is retried as well.
func TestReconcileWaitsForTheAPI(t *testing.T) {
	client := fake.NewClientset()
	gr := schema.GroupResource{Group: rbacv1.GroupName, Resource: "clusterroles"}
	lists := failFirst(client, "list", "clusterroles", 3, apierrors.NewServiceUnavailable("etcd is starting"))
	failFirst(client, "create", "rolebindings", 1, apierrors.NewInternalError(errors.New("boom")))
	failFirst(client, "create", "clusterroles", 1, apierrors.NewConflict(gr, "x", errors.New("raced")))
	reconcileOK(t, client)
	if lists.Load() < 4 {
		t.Errorf("list calls: %d, want the 3 failures and a success", lists.Load())
	}
	rbs, _ := client.RbacV1().RoleBindings("").List(t.Context(), metav1.ListOptions{})
	if len(rbs.Items) != len(Default().RoleBindings) {
		t.Errorf("role bindings after a failed create: %d", len(rbs.Items))
	}
}

// TestReconcileEndsWithTheContext: an API that never answers ends in an
// error that says why.
func TestReconcileEndsWithTheContext(t *testing.T) {
	client := fake.NewClientset()
	failFirst(client, "list", "clusterroles", 1<<40, apierrors.NewNotFound(schema.GroupResource{Resource: "clusterroles"}, ""))
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	err := reconcileEvery(ctx, client, testLog(t), time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "unable to initialize roles") || !strings.Contains(err.Error(), "unable to initialize clusterroles") {
		t.Errorf("err = %v", err)
	}
}
