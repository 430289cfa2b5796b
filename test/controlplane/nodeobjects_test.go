package controlplane_test

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// TestNodeReadsSingleObjectsOfItsPods: a node lists and watches one
// secret or config map of its pods by fieldSelector metadata.name (what
// the kubelet's watch-based managers do), and still cannot list a
// namespace's secrets, nor read another pod's.
func TestNodeReadsSingleObjectsOfItsPods(t *testing.T) {
	const node = "e2e-objects-node"
	ctx := context.Background()
	ns := namespace(t)
	admin := clientset(t, adminConfig)
	nodeCS := clientset(t, nodeKubeconfig(t, node))
	for _, name := range []string{"used", "other"} {
		if _, err := admin.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := admin.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: corev1.PodSpec{
		NodeName:         node,
		ImagePullSecrets: []corev1.LocalObjectReference{{Name: "used"}},
		Containers:       []corev1.Container{{Name: "c", Image: "busybox:1"}},
		Volumes: []corev1.Volume{{Name: "cfg", VolumeSource: corev1.VolumeSource{
			ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "used"}}}}},
	}}
	if _, err := admin.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { // no kubelet confirms its deletion
		zero := int64(0)
		_ = admin.CoreV1().Pods(ns).Delete(ctx, "p", metav1.DeleteOptions{GracePeriodSeconds: &zero})
	})
	byName := func(name string) metav1.ListOptions {
		return metav1.ListOptions{FieldSelector: "metadata.name=" + name}
	}

	cms, err := nodeCS.CoreV1().ConfigMaps(ns).List(ctx, byName("used"))
	if err != nil || len(cms.Items) != 1 {
		t.Fatalf("list its pod's config map: %v %v", cms, err)
	}
	secrets, err := nodeCS.CoreV1().Secrets(ns).List(ctx, byName("used"))
	if err != nil || len(secrets.Items) != 1 {
		t.Fatalf("list its pod's pull secret: %v %v", secrets, err)
	}
	for what, open := range map[string]func() (watch.Interface, error){
		"config map": func() (watch.Interface, error) { return nodeCS.CoreV1().ConfigMaps(ns).Watch(ctx, byName("used")) },
		"secret":     func() (watch.Interface, error) { return nodeCS.CoreV1().Secrets(ns).Watch(ctx, byName("used")) },
	} {
		w, err := open()
		if err != nil {
			t.Errorf("watch its pod's %s: %v", what, err)
			continue
		}
		w.Stop()
	}

	forbidden := map[string]func() error{
		"list the namespace's secrets": func() error { _, err := nodeCS.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{}); return err },
		"list every secret":            func() error { _, err := nodeCS.CoreV1().Secrets("").List(ctx, metav1.ListOptions{}); return err },
		"list every secret named used": func() error { _, err := nodeCS.CoreV1().Secrets("").List(ctx, byName("used")); return err },
		"watch the namespace's secrets": func() error {
			_, err := nodeCS.CoreV1().Secrets(ns).Watch(ctx, metav1.ListOptions{})
			return err
		},
		"list the namespace's config maps": func() error { _, err := nodeCS.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{}); return err },
		"list another secret":              func() error { _, err := nodeCS.CoreV1().Secrets(ns).List(ctx, byName("other")); return err },
		"watch another config map": func() error {
			_, err := nodeCS.CoreV1().ConfigMaps(ns).Watch(ctx, byName("other"))
			return err
		},
		"get another secret": func() error { _, err := nodeCS.CoreV1().Secrets(ns).Get(ctx, "other", metav1.GetOptions{}); return err },
	}
	for what, call := range forbidden {
		if err := call(); !apierrors.IsForbidden(err) {
			t.Errorf("%s: %v, want Forbidden", what, err)
		}
	}
}
