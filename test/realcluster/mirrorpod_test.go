package realcluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeagent/nodeagent/test/framework"
)

// TestMirrorPod: a static pod manifest in the agent's staticPodPath runs,
// and its mirror pod (<name>-<node>) appears in the real API as the
// kubelet creates it: the kubernetes.io/config.mirror annotation and the
// Node as its controlling owner, which the NodeRestriction admission
// plugin requires of a node's pods. Removing the manifest stops the pod
// and deletes the mirror pod.
func TestMirrorPod(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	const manifest = "static-web.yaml"
	mirror := "static-web-" + nodeName
	t.Cleanup(func() {
		if err := agent.RemoveManifest(manifest); err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Errorf("remove manifest: %v", err)
		}
	})
	if err := agent.WriteManifest(manifest, `apiVersion: v1
kind: Pod
metadata:
  name: static-web
  namespace: default
  labels:
    app: static-web
spec:
  containers:
  - name: c
    image: `+framework.BusyboxImage+`
    command: ["sh", "-c", "trap 'exit 0' TERM; sleep 3600 & wait"]
`); err != nil {
		t.Fatal(err)
	}

	var pod *v1.Pod
	framework.WaitFor(t, apiTimeout, "the mirror pod to be Running in the API", func() (bool, error) {
		p, err := cl.admin.CoreV1().Pods("default").Get(ctx, mirror, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		pod = p
		return p.Status.Phase == v1.PodRunning, fmt.Errorf("phase %s", p.Status.Phase)
	})
	node, err := cl.admin.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := pod.Annotations[v1.MirrorPodAnnotationKey]; !ok {
		t.Errorf("annotations %v: no %s", pod.Annotations, v1.MirrorPodAnnotationKey)
	}
	if got := pod.Annotations["kubernetes.io/config.source"]; got != "file" {
		t.Errorf("kubernetes.io/config.source = %q, want file", got)
	}
	if pod.Spec.NodeName != nodeName {
		t.Errorf("spec.nodeName = %q, want %q", pod.Spec.NodeName, nodeName)
	}
	refs := pod.OwnerReferences
	if len(refs) != 1 || refs[0].APIVersion != "v1" || refs[0].Kind != "Node" || refs[0].Name != nodeName ||
		refs[0].UID != node.UID || refs[0].Controller == nil || !*refs[0].Controller {
		t.Errorf("ownerReferences %+v, want the Node %s (uid %s) as controller", refs, nodeName, node.UID)
	}
	// The static pod's UID is its config hash, not the mirror pod's.
	uid := pod.Annotations[v1.MirrorPodAnnotationKey]
	if n := len(containersOf(t, uid)); n == 0 {
		t.Errorf("containerd holds no container of the static pod (uid %s)", uid)
	}
	if err := agent.RemoveManifest(manifest); err != nil {
		t.Fatal(err)
	}
	framework.WaitFor(t, apiTimeout, "the mirror pod and the static pod's containers to go", func() (bool, error) {
		_, err := cl.admin.CoreV1().Pods("default").Get(ctx, mirror, metav1.GetOptions{})
		gone := apierrors.IsNotFound(err)
		if err != nil && !gone {
			return false, err
		}
		cs, sbs := containersOf(t, uid), sandboxesOf(t, uid)
		return gone && len(cs) == 0 && sbs == 0, fmt.Errorf("mirror pod gone: %v; %d containers, %d sandboxes left", gone, len(cs), sbs)
	})
}
