package registry

import (
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func storageClass(name string) *storagev1.StorageClass {
	sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: "1"}, Provisioner: "kubernetes.io/no-provisioner"}
	storageClasses.Default(sc)
	return sc
}

func TestStorageClass(t *testing.T) {
	sc := storageClass("local")
	if *sc.ReclaimPolicy != v1.PersistentVolumeReclaimDelete || *sc.VolumeBindingMode != storagev1.VolumeBindingImmediate {
		t.Errorf("defaults: %v %v", *sc.ReclaimPolicy, *sc.VolumeBindingMode)
	}
	expectErrors(t, "valid", storageClasses.Validate(sc))

	bad := storageClass("bad")
	bad.Provisioner = ""
	mode := storagev1.VolumeBindingMode("Later")
	bad.VolumeBindingMode = &mode
	recycle := v1.PersistentVolumeReclaimRecycle
	bad.ReclaimPolicy = &recycle
	expectErrors(t, "invalid", storageClasses.Validate(bad),
		"FieldValueRequired provisioner", "FieldValueNotSupported reclaimPolicy", "FieldValueNotSupported volumeBindingMode")

	changed := sc.DeepCopy()
	changed.Provisioner = "example.com/other"
	changed.Parameters = map[string]string{"a": "b"}
	wffc := storagev1.VolumeBindingWaitForFirstConsumer
	changed.VolumeBindingMode = &wffc
	expectErrors(t, "update", storageClasses.ValidateUpdate(changed, sc),
		"FieldValueForbidden parameters", "FieldValueForbidden provisioner", "FieldValueInvalid volumeBindingMode")
	expand := sc.DeepCopy()
	yes := true
	expand.AllowVolumeExpansion = &yes
	expectErrors(t, "expansion flag", storageClasses.ValidateUpdate(expand, sc))
}

func TestStorageClassTable(t *testing.T) {
	now, reg := fixedNow(t)
	storageClasses := reg.Get("storage.k8s.io", "v1", "storageclasses")
	sc := storageClass("local")
	sc.Annotations = map[string]string{"storageclass.kubernetes.io/is-default-class": "true"}
	sc.CreationTimestamp = metav1.NewTime(now.Add(-time.Minute))
	cols, cells := rows(t, storageClasses, false, sc)
	if want := []string{"Name", "Provisioner", "ReclaimPolicy", "VolumeBindingMode", "AllowVolumeExpansion", "Age"}; !slices.Equal(cols, want) {
		t.Errorf("columns %q", cols)
	}
	if want := []interface{}{"local (default)", "kubernetes.io/no-provisioner", "Delete", "Immediate", false, "60s"}; !slices.Equal(cells[0], want) {
		t.Errorf("row %v, want %v", cells[0], want)
	}
}
