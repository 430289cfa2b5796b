package ctrlutil_test

import (
	"context"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodeagent/nodeagent/pkg/controlplane/controller/internal/ctrltest"
	"github.com/nodeagent/nodeagent/pkg/controlplane/controller/internal/ctrlutil"
)

var rsKind = appsv1.SchemeGroupVersion.WithKind("ReplicaSet")

func TestPatches(t *testing.T) {
	owner := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "web", UID: "rs-uid"}}
	adopt, err := ctrlutil.AdoptPatch(owner, rsKind, "pod-uid")
	if err != nil {
		t.Fatal(err)
	}
	want := `{"metadata":{"ownerReferences":[{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"web","uid":"rs-uid","controller":true,"blockOwnerDeletion":true}],"uid":"pod-uid"}}`
	if string(adopt) != want {
		t.Errorf("AdoptPatch:\n got %s\nwant %s", adopt, want)
	}
	release, err := ctrlutil.ReleasePatch("rs-uid", "pod-uid")
	if err != nil {
		t.Fatal(err)
	}
	want = `{"metadata":{"ownerReferences":[{"$patch":"delete","uid":"rs-uid"}],"uid":"pod-uid"}}`
	if string(release) != want {
		t.Errorf("ReleasePatch:\n got %s\nwant %s", release, want)
	}
}

// TestClaimPatches: adoption keeps other owners, release removes only the
// controllerRef, and a pod recreated under the same name is not adopted
// (the UID precondition fails).
func TestClaimPatches(t *testing.T) {
	owner := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "rs-uid"}}
	other := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "cm", UID: "cm-uid"}
	pod := func(name string, uid types.UID, app string, refs ...metav1.OwnerReference) *v1.Pod {
		return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: uid,
			Labels: map[string]string{"app": app}, OwnerReferences: refs}}
	}
	orphan := pod("orphan", "orphan-uid", "web", other)
	leaving := pod("leaving", "leaving-uid", "db", other, *ctrlutil.NewControllerRef(owner, rsKind))
	client := ctrltest.NewClientset(owner, orphan, leaving, pod("recreated", "new-uid", "web"))
	pods := client.CoreV1().Pods("default")
	m := ctrlutil.NewClaimer[*v1.Pod](owner, rsKind, labels.SelectorFromSet(labels.Set{"app": "web"}),
		func(ctx context.Context) (metav1.Object, error) {
			return client.AppsV1().ReplicaSets("default").Get(ctx, "web", metav1.GetOptions{})
		},
		func(ctx context.Context, name string, data []byte) error {
			_, err := pods.Patch(ctx, name, types.StrategicMergePatchType, data, metav1.PatchOptions{})
			return err
		})
	stale := pod("recreated", "old-uid", "web") // the cache's view of a pod since recreated
	claimed, err := m.Claim(t.Context(), []*v1.Pod{orphan, leaving, stale})
	if len(claimed) != 1 || claimed[0].Name != "orphan" {
		t.Errorf("claimed %d pods, want the orphan", len(claimed))
	}
	if !apierrors.IsConflict(err) {
		t.Errorf("Claim error %v, want the conflict of the recreated pod", err)
	}
	check := func(name string, want ...string) {
		t.Helper()
		p, err := pods.Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, r := range p.OwnerReferences {
			got = append(got, r.Kind+"/"+r.Name)
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("%s owners %v, want %v", name, got, want)
		}
	}
	check("orphan", "ConfigMap/cm", "ReplicaSet/web")
	check("leaving", "ConfigMap/cm")
	check("recreated")
}
