package apiserver

import (
	"testing"

	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestDefaultStorageClass: a claim created without a class gets the
// default one; an explicit "" (no class) is kept.
func TestDefaultStorageClass(t *testing.T) {
	ns := testNamespace(t)
	class := &storagev1.StorageClass{
		ObjectMeta:  metav1.ObjectMeta{Name: "default-" + ns, Annotations: map[string]string{"storageclass.kubernetes.io/is-default-class": "true"}},
		Provisioner: "example.com/none",
	}
	if _, err := client.StorageV1().StorageClasses().Create(ctxT(t), class, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.StorageV1().StorageClasses().Delete(ctxT(t), class.Name, metav1.DeleteOptions{}) })

	got, err := client.CoreV1().PersistentVolumeClaims(ns).Create(ctxT(t), testClaim("defaulted", ""), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Spec.StorageClassName == nil || *got.Spec.StorageClassName != class.Name {
		t.Errorf("class of a claim without one: %v, want %s", got.Spec.StorageClassName, class.Name)
	}
	none := testClaim("classless", "")
	empty := ""
	none.Spec.StorageClassName = &empty
	if got, err = client.CoreV1().PersistentVolumeClaims(ns).Create(ctxT(t), none, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if got.Spec.StorageClassName == nil || *got.Spec.StorageClassName != "" {
		t.Errorf("an explicit empty class changed: %v", got.Spec.StorageClassName)
	}
}
