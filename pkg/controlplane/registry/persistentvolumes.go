package registry

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
)

// PersistentVolumes, as upstream's pkg/registry/core/persistentvolume:
// cluster-scoped, spec and status written through separate endpoints.
// The kubernetes.io/pv-protection finalizer is not added (no controller
// here removes it).
func (b *builder) persistentVolumes() *Resource {
	return &Resource{
		GVK:          v1.SchemeGroupVersion.WithKind("PersistentVolume"),
		Plural:       "persistentvolumes",
		Singular:     "persistentvolume",
		ShortNames:   []string{"pv"},
		Verbs:        allVerbs,
		Subresources: []string{"status"},
		New:          func() runtime.Object { return &v1.PersistentVolume{} },
		NewList:      func() runtime.Object { return &v1.PersistentVolumeList{} },

		Default:                hook(defaultPersistentVolume),
		PrepareForCreate:       hook(b.preparePersistentVolumeForCreate),
		PrepareForUpdate:       hook2(func(pv, old *v1.PersistentVolume) { pv.Status = old.Status }),
		PrepareForStatusUpdate: hook2(b.preparePersistentVolumeForStatusUpdate),
		Validate:               check(validatePersistentVolume),
		ValidateUpdate:         check2(validatePersistentVolumeUpdate),
		ValidateStatusUpdate:   check2(validatePersistentVolumeStatusUpdate),
		// "name" is an upstream bug kept for compatibility.
		FieldSet: fieldSet(false, func(pv *v1.PersistentVolume) fields.Set { return fields.Set{"name": pv.Name} }),
		Table:    table(persistentVolumeColumns, b.persistentVolumeRow),
	}
}

// defaultPersistentVolume is upstream's SetDefaults_PersistentVolume.
func defaultPersistentVolume(pv *v1.PersistentVolume) {
	if pv.Status.Phase == "" {
		pv.Status.Phase = v1.VolumePending
	}
	if pv.Spec.PersistentVolumeReclaimPolicy == "" {
		pv.Spec.PersistentVolumeReclaimPolicy = v1.PersistentVolumeReclaimRetain
	}
	if pv.Spec.VolumeMode == nil {
		mode := v1.PersistentVolumeFilesystem
		pv.Spec.VolumeMode = &mode
	}
}

// preparePersistentVolumeForCreate: a new volume is Pending until the
// binder looks at it; the phase change is timestamped.
func (b *builder) preparePersistentVolumeForCreate(pv *v1.PersistentVolume) {
	now := b.now()
	pv.Status = v1.PersistentVolumeStatus{Phase: v1.VolumePending, LastPhaseTransitionTime: &now}
}

// preparePersistentVolumeForStatusUpdate keeps the spec and stamps a phase
// change unless the writer set a new transition time itself.
func (b *builder) preparePersistentVolumeForStatusUpdate(pv, old *v1.PersistentVolume) {
	pv.Spec = old.Spec
	if pv.Status.Phase == old.Status.Phase {
		return
	}
	if t := pv.Status.LastPhaseTransitionTime; t == nil || t.Equal(old.Status.LastPhaseTransitionTime) {
		now := b.now()
		pv.Status.LastPhaseTransitionTime = &now
	}
}
