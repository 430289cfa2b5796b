package apiclient

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/nodeagent/nodeagent/pkg/podsource"
	"github.com/nodeagent/nodeagent/pkg/podutil"
)

// staticPod is a pod as pkg/podsource/file makes it.
func staticPod(name, contentHash string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: name + "-node-a", Namespace: "default", UID: k8stypes.UID("static-" + name),
			Labels: map[string]string{"app": name},
			Annotations: map[string]string{
				podutil.ConfigSourceAnnotation: podutil.SourceFile, podutil.ConfigHashAnnotation: "static-" + name,
				podsource.ContentHashAnnotation: contentHash,
			},
		},
		Spec: v1.PodSpec{NodeName: "node-a", Containers: []v1.Container{{Name: "c", Image: "busybox"}}},
	}
}

func newTestMirrors(t *testing.T) (*MirrorManager, *fake.Clientset) {
	t.Helper()
	cs := fake.NewClientset(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a", UID: "node-uid"}})
	m, err := NewMirrorManager(MirrorConfig{Client: cs, NodeName: "node-a", Logger: discard})
	if err != nil {
		t.Fatal(err)
	}
	return m, cs
}

// apiMirrors lists the mirror pods in the fake API, as the informer would.
func apiMirrors(t *testing.T, cs *fake.Clientset) []*v1.Pod {
	t.Helper()
	list, err := cs.CoreV1().Pods("").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []*v1.Pod
	for i := range list.Items {
		if _, ok := list.Items[i].Annotations[podutil.ConfigMirrorAnnotation]; ok {
			out = append(out, &list.Items[i])
		}
	}
	return out
}

func reconcileWith(t *testing.T, m *MirrorManager, cs *fake.Clientset, static ...*v1.Pod) {
	t.Helper()
	m.Update(static, apiMirrors(t, cs))
	if err := m.reconcile(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestMirrorPodLifecycle(t *testing.T) {
	m, cs := newTestMirrors(t)
	sp := staticPod("etcd", "c1")
	reconcileWith(t, m, cs, sp)

	mp := getPod(t, cs, sp.Name)
	if mp.Annotations[podutil.ConfigMirrorAnnotation] != "static-etcd" || mp.Labels["app"] != "etcd" || mp.Spec.NodeName != "node-a" || mp.Spec.Containers[0].Image != "busybox" {
		t.Fatalf("mirror pod = %+v", mp.ObjectMeta)
	}
	if o := mp.OwnerReferences; len(o) != 1 || o[0].Kind != "Node" || o[0].UID != "node-uid" || o[0].Controller == nil || !*o[0].Controller {
		t.Errorf("owner references = %+v", o)
	}
	if mp.UID == sp.UID {
		t.Errorf("mirror pod reuses the static pod's UID")
	}

	// Nothing to do when it is there.
	reconcileWith(t, m, cs, sp)
	if n := countActions(cs, "create", "pods", ""); n != 1 {
		t.Errorf("%d creates, want 1", n)
	}

	// Deleted by a user: recreated.
	if err := cs.CoreV1().Pods("default").Delete(context.Background(), sp.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	reconcileWith(t, m, cs, sp)
	getPod(t, cs, sp.Name)

	// Manifest edited (new content hash): replaced.
	edited := staticPod("etcd", "c2")
	reconcileWith(t, m, cs, edited)
	if got := getPod(t, cs, sp.Name); got.Annotations[podsource.ContentHashAnnotation] != "c2" {
		t.Errorf("mirror pod not replaced after an edit: %v", got.Annotations)
	}

	// Static pod gone: mirror deleted.
	reconcileWith(t, m, cs)
	if _, err := cs.CoreV1().Pods("default").Get(context.Background(), sp.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("mirror pod of a removed static pod still there: %v", err)
	}
}

func TestMirrorPodBeingDeletedIsReplaced(t *testing.T) {
	m, cs := newTestMirrors(t)
	sp := staticPod("etcd", "c1")
	reconcileWith(t, m, cs, sp)
	mp := getPod(t, cs, sp.Name)
	now := metav1.Now()
	mp.DeletionTimestamp = &now // a graceful delete through the API
	if _, err := cs.CoreV1().Pods("default").Update(context.Background(), mp, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	reconcileWith(t, m, cs, sp)
	got := getPod(t, cs, sp.Name)
	if got.DeletionTimestamp != nil {
		t.Fatalf("mirror pod being deleted was not replaced")
	}
}
