package controller_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// rootCAState is what the namespace's kube-root-ca.crt holds, and whether
// it is the cluster CA with upstream's description.
func rootCAState(ctx context.Context, c kubernetes.Interface, ns string, ca []byte) (bool, string, error) {
	cm, err := c.CoreV1().ConfigMaps(ns).Get(ctx, "kube-root-ca.crt", metav1.GetOptions{})
	if err != nil {
		return false, err.Error(), nil
	}
	ok := len(cm.Data) == 1 && cm.Data["ca.crt"] == string(ca) &&
		strings.HasPrefix(cm.Annotations["kubernetes.io/description"], "Contains a CA bundle that can be used to verify the kube-apiserver")
	return ok, fmt.Sprintf("data keys %d, annotations %v", len(cm.Data), cm.Annotations), nil
}

// TestRootCAAndServiceAccountVolume: on the real server, every namespace
// (system ones and new ones) gets the cluster CA as kube-root-ca.crt, and
// gets it back when it is deleted or edited; a pod created there carries
// the API access volume that projects it.
func TestRootCAAndServiceAccountVolume(t *testing.T) {
	rc := startControlPlaneConfig(t)
	client := kubernetes.NewForConfigOrDie(rc)
	ca := rc.TLSClientConfig.CAData
	if len(ca) == 0 {
		t.Fatal("the admin kubeconfig has no CA data")
	}
	for _, ns := range []string{"default", "kube-system", "kube-public", "kube-node-lease"} {
		eventually(t, "root CA in "+ns, func(ctx context.Context) (bool, string, error) { return rootCAState(ctx, client, ns, ca) })
	}
	ns, err := client.CoreV1().Namespaces().Create(t.Context(), &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "rootca"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "root CA in a new namespace", func(ctx context.Context) (bool, string, error) { return rootCAState(ctx, client, ns.Name, ca) })

	if err := client.CoreV1().ConfigMaps(ns.Name).Delete(t.Context(), "kube-root-ca.crt", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "deleted root CA recreated", func(ctx context.Context) (bool, string, error) { return rootCAState(ctx, client, ns.Name, ca) })
	patch := []byte(`{"data":{"ca.crt":"forged","extra":"x"}}`)
	if _, err := client.CoreV1().ConfigMaps(ns.Name).Patch(t.Context(), "kube-root-ca.crt", "application/merge-patch+json", patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "edited root CA restored", func(ctx context.Context) (bool, string, error) { return rootCAState(ctx, client, ns.Name, ca) })

	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "busybox:1"}}}}
	pod, err = client.CoreV1().Pods(ns.Name).Create(t.Context(), pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(pod.Spec.Volumes) != 1 || pod.Spec.Volumes[0].Projected == nil || len(pod.Spec.Volumes[0].Projected.Sources) != 3 ||
		pod.Spec.Volumes[0].Projected.Sources[1].ConfigMap == nil || pod.Spec.Volumes[0].Projected.Sources[1].ConfigMap.Name != "kube-root-ca.crt" {
		t.Fatalf("pod volumes: %+v", pod.Spec.Volumes)
	}
	if m := pod.Spec.Containers[0].VolumeMounts; len(m) != 1 || m[0].Name != pod.Spec.Volumes[0].Name ||
		m[0].MountPath != "/var/run/secrets/kubernetes.io/serviceaccount" || !m[0].ReadOnly {
		t.Errorf("container mounts: %+v", m)
	}
}
