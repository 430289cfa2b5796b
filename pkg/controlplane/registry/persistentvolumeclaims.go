package registry

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
)

// PersistentVolumeClaims, as upstream's
// pkg/registry/core/persistentvolumeclaim. The kubernetes.io/pvc-protection
// finalizer is not added: a claim in use by a pod is deleted at once.
func (b *builder) persistentVolumeClaims() *Resource {
	return &Resource{
		GVK:          v1.SchemeGroupVersion.WithKind("PersistentVolumeClaim"),
		Plural:       "persistentvolumeclaims",
		Singular:     "persistentvolumeclaim",
		ShortNames:   []string{"pvc"},
		Namespaced:   true,
		Verbs:        allVerbs,
		Subresources: []string{"status"},
		New:          func() runtime.Object { return &v1.PersistentVolumeClaim{} },
		NewList:      func() runtime.Object { return &v1.PersistentVolumeClaimList{} },

		Default: hook(defaultPersistentVolumeClaim),
		PrepareForCreate: hook(func(pvc *v1.PersistentVolumeClaim) {
			pvc.Status = v1.PersistentVolumeClaimStatus{Phase: v1.ClaimPending}
		}),
		PrepareForUpdate:       hook2(func(pvc, old *v1.PersistentVolumeClaim) { pvc.Status = old.Status }),
		PrepareForStatusUpdate: hook2(func(pvc, old *v1.PersistentVolumeClaim) { pvc.Spec = old.Spec }),
		Validate:               check(validatePersistentVolumeClaim),
		ValidateUpdate:         check2(validatePersistentVolumeClaimUpdate),
		ValidateStatusUpdate:   check2(validatePersistentVolumeClaimStatusUpdate),
		FieldSet:               fieldSet(true, func(pvc *v1.PersistentVolumeClaim) fields.Set { return fields.Set{"name": pvc.Name} }),
		Table:                  table(persistentVolumeClaimColumns, b.persistentVolumeClaimRow),
	}
}

// defaultPersistentVolumeClaim is upstream's SetDefaults_PersistentVolumeClaim
// and SetDefaults_PersistentVolumeClaimSpec.
func defaultPersistentVolumeClaim(pvc *v1.PersistentVolumeClaim) {
	if pvc.Status.Phase == "" {
		pvc.Status.Phase = v1.ClaimPending
	}
	if pvc.Spec.VolumeMode == nil {
		mode := v1.PersistentVolumeFilesystem
		pvc.Spec.VolumeMode = &mode
	}
}
