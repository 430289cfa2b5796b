package garbagecollector

import (
	"context"
	"fmt"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"

	"github.com/nodeagent/nodeagent/pkg/controlplane/controller/internal/ctrltest"
)

func ref(apiVersion, kind, name string, uid types.UID, block bool) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: name, UID: uid, BlockOwnerDeletion: &block}
}

func meta(name string, refs ...metav1.OwnerReference) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID(name + "-uid"), OwnerReferences: refs}
}

// TestCollectorScenario covers background deletion, stale references next
// to a live owner, unknown owner kinds, cluster-scoped owners, and the
// foreground and orphan finalizers.
func TestCollectorScenario(t *testing.T) {
	now := metav1.Now()
	live := &appsv1.ReplicaSet{ObjectMeta: meta("live")}
	fg := &appsv1.ReplicaSet{ObjectMeta: meta("fg")}
	fg.DeletionTimestamp, fg.Finalizers = &now, []string{metav1.FinalizerDeleteDependents}
	orph := &appsv1.Deployment{ObjectMeta: meta("orph")}
	orph.DeletionTimestamp, orph.Finalizers = &now, []string{metav1.FinalizerOrphanDependents}
	objs := []struct {
		obj  interface{ GetName() string }
		kept bool
	}{
		{&appsv1.ReplicaSet{ObjectMeta: meta("orphaned-rs", ref("apps/v1", "Deployment", "gone", "gone-uid", true))}, false},
		// Same name as a live owner, but another UID: the owner is gone.
		{&v1.Pod{ObjectMeta: meta("stale-uid", ref("apps/v1", "ReplicaSet", "live", "old-uid", true))}, false},
		{&v1.Pod{ObjectMeta: meta("owned", ref("apps/v1", "ReplicaSet", "live", "live-uid", true))}, true},
		{&v1.ConfigMap{ObjectMeta: meta("two-owners", ref("apps/v1", "ReplicaSet", "live", "live-uid", false),
			ref("apps/v1", "Deployment", "gone", "gone-uid", false))}, true},
		{&v1.Secret{ObjectMeta: meta("unknown-kind", ref("example.com/v1", "Widget", "w", "w-uid", false))}, true},
		{&coordinationv1.Lease{ObjectMeta: meta("node-lease", ref("v1", "Node", "n1", "n1-uid", false))}, false},
		{&v1.Pod{ObjectMeta: meta("fg-dep", ref("apps/v1", "ReplicaSet", "fg", "fg-uid", true))}, false},
		{&appsv1.ReplicaSet{ObjectMeta: meta("orph-dep", ref("apps/v1", "Deployment", "orph", "orph-uid", true))}, true},
	}
	client := ctrltest.NewClientset(live, fg, orph)
	for _, o := range objs {
		var err error
		switch x := o.obj.(type) {
		case *appsv1.ReplicaSet:
			_, err = client.AppsV1().ReplicaSets("default").Create(t.Context(), x, metav1.CreateOptions{})
		case *v1.Pod:
			_, err = client.CoreV1().Pods("default").Create(t.Context(), x, metav1.CreateOptions{})
		case *v1.ConfigMap:
			_, err = client.CoreV1().ConfigMaps("default").Create(t.Context(), x, metav1.CreateOptions{})
		case *v1.Secret:
			_, err = client.CoreV1().Secrets("default").Create(t.Context(), x, metav1.CreateOptions{})
		case *coordinationv1.Lease:
			_, err = client.CoordinationV1().Leases("default").Create(t.Context(), x, metav1.CreateOptions{})
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	f := informers.NewSharedInformerFactory(client, 0)
	gc := New(client, f, ctrltest.Logger(t))
	ctrltest.Start(t, f, func(ctx context.Context) error { return gc.Run(ctx, 2) })

	exists := func(ctx context.Context, o any) bool {
		var err error
		switch x := o.(type) {
		case *appsv1.ReplicaSet:
			_, err = client.AppsV1().ReplicaSets("default").Get(ctx, x.Name, metav1.GetOptions{})
		case *v1.Pod:
			_, err = client.CoreV1().Pods("default").Get(ctx, x.Name, metav1.GetOptions{})
		case *v1.ConfigMap:
			_, err = client.CoreV1().ConfigMaps("default").Get(ctx, x.Name, metav1.GetOptions{})
		case *v1.Secret:
			_, err = client.CoreV1().Secrets("default").Get(ctx, x.Name, metav1.GetOptions{})
		case *coordinationv1.Lease:
			_, err = client.CoordinationV1().Leases("default").Get(ctx, x.Name, metav1.GetOptions{})
		}
		if err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
		return err == nil
	}
	ctrltest.Eventually(t, "dependents of missing owners deleted", func(ctx context.Context) (bool, string) {
		for _, o := range objs {
			if exists(ctx, o.obj) != o.kept {
				return false, fmt.Sprintf("%s exists=%v, want %v", o.obj.GetName(), !o.kept, o.kept)
			}
		}
		return true, ""
	})
	ctrltest.Eventually(t, "stale reference removed, finalizers done", func(ctx context.Context) (bool, string) {
		cm, _ := client.CoreV1().ConfigMaps("default").Get(ctx, "two-owners", metav1.GetOptions{})
		rs, _ := client.AppsV1().ReplicaSets("default").Get(ctx, "orph-dep", metav1.GetOptions{})
		fgNow, _ := client.AppsV1().ReplicaSets("default").Get(ctx, "fg", metav1.GetOptions{})
		orphNow, _ := client.AppsV1().Deployments("default").Get(ctx, "orph", metav1.GetOptions{})
		ok := len(cm.OwnerReferences) == 1 && cm.OwnerReferences[0].Name == "live" && len(rs.OwnerReferences) == 0 &&
			len(fgNow.Finalizers) == 0 && len(orphNow.Finalizers) == 0
		return ok, fmt.Sprintf("cm owners %v, orph-dep owners %v, fg finalizers %v, orph finalizers %v",
			cm.OwnerReferences, rs.OwnerReferences, fgNow.Finalizers, orphNow.Finalizers)
	})
}
