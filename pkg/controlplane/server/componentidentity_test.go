package server

import (
	"context"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
)

// createReadyNode registers a Node that reports Ready, with room for pods
// (no agent: the node lifecycle controller marks it unreachable only after
// its 40 s grace period).
func createReadyNode(t *testing.T, cs kubernetes.Interface, name string) {
	t.Helper()
	node, err := cs.CoreV1().Nodes().Create(t.Context(), &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	capacity := v1.ResourceList{v1.ResourceCPU: resource.MustParse("4"), v1.ResourceMemory: resource.MustParse("8Gi"), v1.ResourcePods: resource.MustParse("110")}
	node.Status = v1.NodeStatus{Capacity: capacity, Allocatable: capacity, Conditions: []v1.NodeCondition{{
		Type: v1.NodeReady, Status: v1.ConditionTrue, Reason: "KubeletReady", LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}}}
	if _, err := cs.CoreV1().Nodes().UpdateStatus(t.Context(), node, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestSchedulerActsAsKubeScheduler runs the real control plane: the
// scheduler binds as system:kube-scheduler, so that taking pods/binding
// from that role leaves a pod unbound with upstream's "Binding rejected"
// event naming the identity.
func TestSchedulerActsAsKubeScheduler(t *testing.T) {
	dir := t.TempDir()
	cfg := Config{DataDir: dir, SecurePort: freePort(t), BindAddress: "127.0.0.1",
		EtcdClientPort: freePort(t), EtcdPeerPort: freePort(t)}
	r := start(t, cfg)
	defer r.stop(t)
	cs := clientset(t, dir)
	ctx := t.Context()

	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		role, err := cs.RbacV1().ClusterRoles().Get(ctx, SchedulerUser, metav1.GetOptions{})
		if err != nil {
			return err
		}
		role.Rules = slices.DeleteFunc(role.Rules, func(r rbacv1.PolicyRule) bool { return slices.Contains(r.Resources, "pods/binding") })
		_, err = cs.RbacV1().ClusterRoles().Update(ctx, role, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	createReadyNode(t, cs, "n1")
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p1", Namespace: "default"},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "busybox"}}}}
	if _, err := cs.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	const refusal = `User "system:kube-scheduler" cannot create resource "pods/binding" in API group "" in the namespace "default"`
	waitFor(t, "FailedScheduling event naming system:kube-scheduler", func(ctx context.Context) (bool, string, error) {
		evs, err := cs.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=p1"})
		if err != nil {
			return false, "", err
		}
		var seen []string
		for _, e := range evs.Items {
			seen = append(seen, e.Reason+": "+e.Message)
			if e.Reason == "FailedScheduling" && strings.HasPrefix(e.Message, "Binding rejected: ") && strings.Contains(e.Message, refusal) {
				return true, "", nil
			}
		}
		return false, strings.Join(seen, "; "), nil
	})
	got, err := cs.CoreV1().Pods("default").Get(ctx, "p1", metav1.GetOptions{})
	if err != nil || got.Spec.NodeName != "" {
		t.Errorf("pod p1 bound to %q (%v) while the scheduler's role refuses bindings", got.Spec.NodeName, err)
	}

}
