package server

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/nodeagent/nodeagent/pkg/controlplane/controller"
)

// waitFor polls cond until it holds, failing with its last state.
func waitFor(t *testing.T, what string, cond func(ctx context.Context) (bool, string, error)) {
	t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		ok, state, err := cond(ctx)
		last = state
		return ok, err
	})
	if err != nil {
		t.Fatalf("%s: %v; last state: %s", what, err, last)
	}
}

// podsOf waits until the ReplicaSet owns want pods.
func podsOf(t *testing.T, cs kubernetes.Interface, rs *appsv1.ReplicaSet, want int) {
	t.Helper()
	waitFor(t, fmt.Sprintf("%d pods of %s", want, rs.Name), func(ctx context.Context) (bool, string, error) {
		pods, err := cs.CoreV1().Pods(rs.Namespace).List(ctx, metav1.ListOptions{LabelSelector: "app=" + rs.Name})
		if err != nil {
			return false, "", err
		}
		n := 0
		for _, p := range pods.Items {
			if ref := metav1.GetControllerOf(&p); ref != nil && ref.UID == rs.UID {
				n++
			}
		}
		return n == want, fmt.Sprintf("%d owned pods", n), nil
	})
}

// TestControllersActAsTheirServiceAccounts runs the real control plane:
// every controller's service account exists in kube-system, and the
// ReplicaSet controller creates pods with the rights of
// system:controller:replicaset-controller only. Without the role's pod
// create rule its creates are refused with Forbidden, as the
// service account (reported in its FailedCreate event, which the role
// still allows); the reconciliation on the next start restores the rule
// and the controller catches up. A deleted account is recreated with the
// controller's next token.
func TestControllersActAsTheirServiceAccounts(t *testing.T) {
	dir := t.TempDir()
	cfg := Config{DataDir: dir, SecurePort: freePort(t), BindAddress: "127.0.0.1",
		EtcdClientPort: freePort(t), EtcdPeerPort: freePort(t)}
	r := start(t, cfg)
	running := true
	defer func() {
		if running {
			r.stop(t)
		}
	}()
	cs := clientset(t, dir)
	ctx := t.Context()

	rs, err := cs.AppsV1().ReplicaSets("default").Create(ctx, &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.ReplicaSetSpec{
			Replicas: new(int32(1)),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: v1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec:       v1.PodSpec{Containers: []v1.Container{{Name: "web", Image: "nginx:1"}}},
			},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	podsOf(t, cs, rs, 1)
	sas, err := cs.CoreV1().ServiceAccounts("kube-system").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, sa := range sas.Items {
		names = append(names, sa.Name)
	}
	for _, want := range controller.ServiceAccounts() {
		if !slices.Contains(names, want) {
			t.Errorf("no service account kube-system/%s; have %v", want, names)
		}
	}

	// Take pod creation away from the controller's role, then scale up.
	const roleName = "system:controller:replicaset-controller"
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		role, err := cs.RbacV1().ClusterRoles().Get(ctx, roleName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		var rules []rbacv1.PolicyRule
		for _, rule := range role.Rules {
			if slices.Contains(rule.Resources, "pods") {
				rule.Verbs = slices.DeleteFunc(slices.Clone(rule.Verbs), func(v string) bool { return v == "create" })
			}
			rules = append(rules, rule)
		}
		role.Rules = rules
		_, err = cs.RbacV1().ClusterRoles().Update(ctx, role, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	scale := func(n int32) {
		t.Helper()
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			cur, err := cs.AppsV1().ReplicaSets("default").Get(ctx, "web", metav1.GetOptions{})
			if err != nil {
				return err
			}
			cur.Spec.Replicas = &n
			_, err = cs.AppsV1().ReplicaSets("default").Update(ctx, cur, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	scale(2)
	const refusal = `is forbidden: User "system:serviceaccount:kube-system:replicaset-controller" cannot create resource "pods" in API group "" in the namespace "default"`
	waitFor(t, "FailedCreate event naming the controller's service account", func(ctx context.Context) (bool, string, error) {
		evs, err := cs.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=web"})
		if err != nil {
			return false, "", err
		}
		var seen []string
		for _, e := range evs.Items {
			seen = append(seen, e.Reason+": "+e.Message)
			if e.Reason == "FailedCreate" && strings.Contains(e.Message, refusal) {
				return true, "", nil
			}
		}
		return false, strings.Join(seen, "; "), nil
	})
	pods, err := cs.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
	if err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != 1 {
		t.Errorf("%d pods while the role refuses creates, want 1", len(pods.Items))
	}

	// The next start reconciles the role back; the controller catches up.
	r.stop(t)
	running = false
	r = start(t, cfg)
	running = true
	cs = clientset(t, dir)
	role, err := cs.RbacV1().ClusterRoles().Get(ctx, roleName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	restored := false
	for _, rule := range role.Rules {
		restored = restored || slices.Contains(rule.Resources, "pods") && slices.Contains(rule.Verbs, "create")
	}
	if !restored {
		t.Errorf("%s after restart: rules %+v, want pods create back", roleName, role.Rules)
	}
	podsOf(t, cs, rs, 2)

	// A deleted account invalidates the controller's token: its next
	// token request recreates the account, and the controller goes on.
	old, err := cs.CoreV1().ServiceAccounts("kube-system").Get(ctx, controller.ServiceAccountReplicaSet, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := cs.CoreV1().ServiceAccounts("kube-system").Delete(ctx, old.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	scale(3)
	podsOf(t, cs, rs, 3)
	sa, err := cs.CoreV1().ServiceAccounts("kube-system").Get(ctx, old.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if sa.UID == old.UID {
		t.Errorf("service account %s keeps UID %s after its deletion, want recreated", sa.Name, sa.UID)
	}
}
