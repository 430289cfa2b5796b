package registry

import (
	"strings"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// StorageClasses (storage.k8s.io/v1), as upstream's
// pkg/registry/storage/storageclass and pkg/apis/storage/validation.
func (b *builder) storageClasses() *Resource {
	return &Resource{
		GVK:        storagev1.SchemeGroupVersion.WithKind("StorageClass"),
		Plural:     "storageclasses",
		Singular:   "storageclass",
		ShortNames: []string{"sc"},
		Verbs:      allVerbs,
		New:        func() runtime.Object { return &storagev1.StorageClass{} },
		NewList:    func() runtime.Object { return &storagev1.StorageClassList{} },

		Default:        hook(defaultStorageClass),
		Validate:       check(validateStorageClass),
		ValidateUpdate: check2(validateStorageClassUpdate),
		FieldSet:       fieldSet[*storagev1.StorageClass](false, nil),
		Table:          table(storageClassColumns, b.storageClassRow),
	}
}

// Upstream's annotations marking the default class.
const (
	isDefaultClassAnnotation     = "storageclass.kubernetes.io/is-default-class"
	isDefaultClassBetaAnnotation = "storageclass.beta.kubernetes.io/is-default-class"
)

// IsDefaultStorageClass reports whether the class is marked as the default.
func IsDefaultStorageClass(m metav1.ObjectMeta) bool {
	return m.Annotations[isDefaultClassAnnotation] == "true" || m.Annotations[isDefaultClassBetaAnnotation] == "true"
}

func defaultStorageClass(sc *storagev1.StorageClass) {
	if sc.ReclaimPolicy == nil {
		policy := v1.PersistentVolumeReclaimDelete
		sc.ReclaimPolicy = &policy
	}
	if sc.VolumeBindingMode == nil {
		mode := storagev1.VolumeBindingImmediate
		sc.VolumeBindingMode = &mode
	}
}

var (
	classReclaimPolicies = sets.New(v1.PersistentVolumeReclaimDelete, v1.PersistentVolumeReclaimRetain)
	bindingModes         = sets.New(storagev1.VolumeBindingImmediate, storagev1.VolumeBindingWaitForFirstConsumer)
)

// Upstream's bounds of a class's parameters.
const (
	maxClassParameters    = 512
	maxClassParameterSize = 256 * (1 << 10)
)

func validateStorageClass(sc *storagev1.StorageClass) field.ErrorList {
	errs := validateMeta(&sc.ObjectMeta, false, apimachineryvalidation.NameIsDNSSubdomain)
	p := field.NewPath("provisioner")
	if sc.Provisioner == "" {
		errs = append(errs, field.Required(p, sc.Provisioner))
	} else {
		errs = append(errs, qualifiedName(strings.ToLower(sc.Provisioner), p)...)
	}
	errs = append(errs, validateClassParameters(sc.Parameters, field.NewPath("parameters"))...)
	if sc.ReclaimPolicy != nil && *sc.ReclaimPolicy != "" && !classReclaimPolicies.Has(*sc.ReclaimPolicy) {
		errs = append(errs, field.NotSupported(field.NewPath("reclaimPolicy"), *sc.ReclaimPolicy, sets.List(classReclaimPolicies)))
	}
	mode := field.NewPath("volumeBindingMode")
	switch {
	case sc.VolumeBindingMode == nil:
		errs = append(errs, field.Required(mode, ""))
	case !bindingModes.Has(*sc.VolumeBindingMode):
		errs = append(errs, field.NotSupported(mode, *sc.VolumeBindingMode, sets.List(bindingModes)))
	}
	return errs
}

func validateClassParameters(params map[string]string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(params) > maxClassParameters {
		errs = append(errs, field.TooLong(p, "", maxClassParameters))
		return errs
	}
	size := 0
	for k, v := range params {
		if k == "" {
			errs = append(errs, field.Invalid(p, params, "field can not be empty."))
		}
		size += len(k) + len(v)
	}
	if size > maxClassParameterSize {
		errs = append(errs, field.TooLong(p, "", maxClassParameterSize))
	}
	return errs
}

// validateStorageClassUpdate: a class is fixed once created but for its
// metadata, mount options and expansion flag.
func validateStorageClassUpdate(sc, old *storagev1.StorageClass) field.ErrorList {
	errs := validateMetaUpdate(&sc.ObjectMeta, &old.ObjectMeta)
	if !equality.Semantic.DeepEqual(sc.Parameters, old.Parameters) {
		errs = append(errs, field.Forbidden(field.NewPath("parameters"), "updates to parameters are forbidden."))
	}
	if sc.Provisioner != old.Provisioner {
		errs = append(errs, field.Forbidden(field.NewPath("provisioner"), "updates to provisioner are forbidden."))
	}
	if !equality.Semantic.DeepEqual(sc.ReclaimPolicy, old.ReclaimPolicy) {
		errs = append(errs, field.Forbidden(field.NewPath("reclaimPolicy"), "updates to reclaimPolicy are forbidden."))
	}
	return append(errs, apimachineryvalidation.ValidateImmutableField(sc.VolumeBindingMode, old.VolumeBindingMode, field.NewPath("volumeBindingMode"))...)
}

var storageClassColumns = []metav1.TableColumnDefinition{
	nameColumn,
	col("Provisioner", "string", storagev1.StorageClass{}.SwaggerDoc()["provisioner"]),
	col("ReclaimPolicy", "string", storagev1.StorageClass{}.SwaggerDoc()["reclaimPolicy"]),
	col("VolumeBindingMode", "string", storagev1.StorageClass{}.SwaggerDoc()["volumeBindingMode"]),
	col("AllowVolumeExpansion", "string", storagev1.StorageClass{}.SwaggerDoc()["allowVolumeExpansion"]),
	ageColumn,
}

func (b *builder) storageClassRow(sc *storagev1.StorageClass) []interface{} {
	name := sc.Name
	if IsDefaultStorageClass(sc.ObjectMeta) {
		name += " (default)"
	}
	policy := string(v1.PersistentVolumeReclaimDelete)
	if sc.ReclaimPolicy != nil {
		policy = string(*sc.ReclaimPolicy)
	}
	mode := string(storagev1.VolumeBindingImmediate)
	if sc.VolumeBindingMode != nil {
		mode = string(*sc.VolumeBindingMode)
	}
	expand := sc.AllowVolumeExpansion != nil && *sc.AllowVolumeExpansion
	return []interface{}{name, sc.Provisioner, policy, mode, expand, b.age(sc.ObjectMeta)}
}
