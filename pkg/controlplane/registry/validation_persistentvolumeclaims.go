package registry

import (
	"fmt"
	"reflect"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/diff"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/nodeagent/nodeagent/pkg/podspec"
)

// PersistentVolumeClaim validation, as upstream's
// ValidatePersistentVolumeClaim, ValidatePersistentVolumeClaimUpdate and
// ValidatePersistentVolumeClaimStatusUpdate (with VolumeAttributesClass and
// RecoverVolumeExpansionFailure enabled, as by default).

func validatePersistentVolumeClaim(pvc *v1.PersistentVolumeClaim) field.ErrorList {
	errs := validateMeta(&pvc.ObjectMeta, true, apimachineryvalidation.NameIsDNSSubdomain)
	return append(errs, validatePersistentVolumeClaimSpec(&pvc.Spec, field.NewPath("spec"))...)
}

func validatePersistentVolumeClaimSpec(spec *v1.PersistentVolumeClaimSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(spec.AccessModes) == 0 {
		errs = append(errs, field.Required(p.Child("accessModes"), "at least 1 access mode is required"))
	}
	if spec.Selector != nil {
		errs = append(errs, metav1validation.ValidateLabelSelector(spec.Selector, metav1validation.LabelSelectorValidationOptions{}, p.Child("selector"))...)
	}
	errs = append(errs, validateAccessModes(spec.AccessModes, p.Child("accessModes"))...)
	storagePath := p.Child("resources").Key(string(v1.ResourceStorage))
	if q, ok := spec.Resources.Requests[v1.ResourceStorage]; !ok {
		errs = append(errs, field.Required(storagePath, ""))
	} else {
		errs = append(errs, positiveQuantity(q, storagePath)...)
	}
	if spec.StorageClassName != nil && *spec.StorageClassName != "" {
		errs = append(errs, className(*spec.StorageClassName, p.Child("storageClassName"))...)
	}
	if spec.VolumeMode != nil && !supportedVolumeModes.Has(*spec.VolumeMode) {
		errs = append(errs, field.NotSupported(p.Child("volumeMode"), *spec.VolumeMode, sets.List(supportedVolumeModes)))
	}
	errs = append(errs, validateClaimDataSources(spec, p)...)
	if vac := spec.VolumeAttributesClassName; vac != nil && *vac != "" {
		errs = append(errs, className(*vac, p.Child("volumeAttributesClassName"))...)
	}
	return errs
}

// validateClaimDataSources checks dataSource and dataSourceRef and that
// they agree when both are set.
func validateClaimDataSources(spec *v1.PersistentVolumeClaimSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	ds, ref := spec.DataSource, spec.DataSourceRef
	if ds != nil {
		errs = append(errs, validateDataSource(ds.Name, ds.Kind, ds.APIGroup, p.Child("dataSource"))...)
	}
	if ref != nil {
		errs = append(errs, validateDataSource(ref.Name, ref.Kind, ref.APIGroup, p.Child("dataSourceRef"))...)
		if ref.Namespace != nil && *ref.Namespace != "" {
			errs = append(errs, podspec.InvalidAll(p.Child("dataSourceRef", "namespace"), *ref.Namespace,
				apimachineryvalidation.ValidateNamespaceName(*ref.Namespace, false))...)
		}
	}
	switch {
	case ref != nil && ref.Namespace != nil && *ref.Namespace != "":
		if ds != nil {
			errs = append(errs, field.Invalid(p, p.Child("dataSource"), "may not be specified when dataSourceRef.namespace is specified"))
		}
	case ds != nil && ref != nil:
		if !reflect.DeepEqual(ds.APIGroup, ref.APIGroup) || ds.Kind != ref.Kind || ds.Name != ref.Name {
			errs = append(errs, field.Invalid(p, p.Child("dataSource"), "must match dataSourceRef"))
		}
	}
	return errs
}

func validateDataSource(name, kind string, apiGroup *string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if name == "" {
		errs = append(errs, field.Required(p.Child("name"), ""))
	}
	if kind == "" {
		errs = append(errs, field.Required(p.Child("kind"), ""))
	}
	group := ""
	if apiGroup != nil {
		group = *apiGroup
	}
	if group == "" && kind != "PersistentVolumeClaim" {
		errs = append(errs, field.Invalid(p, kind, "must be 'PersistentVolumeClaim' when referencing the default apiGroup"))
	}
	if group != "" {
		errs = append(errs, podspec.InvalidAll(p.Child("apiGroup"), group, validation.IsDNS1123Subdomain(group))...)
	}
	return errs
}

// validatePersistentVolumeClaimUpdate holds the update-only rules
// (Validate runs too): the spec is immutable except that volumeName may be
// set once (binding), a class may be set where none was, and a bound
// claim's storage request may grow (expansion) or shrink back to just
// above its status capacity (recovery from a failed expansion).
func validatePersistentVolumeClaimUpdate(pvc, old *v1.PersistentVolumeClaim) field.ErrorList {
	errs := validateMetaUpdate(&pvc.ObjectMeta, &old.ObjectMeta)
	newSpec, oldSpec := pvc.Spec.DeepCopy(), old.Spec.DeepCopy()
	if old.Spec.VolumeName == "" {
		oldSpec.VolumeName = newSpec.VolumeName
	}
	errs = append(errs, allowStorageClassUpgrade(pvc, old, newSpec)...)
	if pvc.Status.Phase == v1.ClaimBound && newSpec.Resources.Requests != nil {
		newSpec.Resources.Requests[v1.ResourceStorage] = old.Spec.Resources.Requests[v1.ResourceStorage]
	}
	newSpec.VolumeAttributesClassName = oldSpec.VolumeAttributesClassName
	if !equality.Semantic.DeepEqual(newSpec, oldSpec) {
		errs = append(errs, field.Forbidden(field.NewPath("spec"), fmt.Sprintf(
			"spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims\n%v", diff.Diff(oldSpec, newSpec))))
	}
	oldSize, newSize := old.Spec.Resources.Requests[v1.ResourceStorage], pvc.Spec.Resources.Requests[v1.ResourceStorage]
	if statusSize := old.Status.Capacity[v1.ResourceStorage]; newSize.Cmp(oldSize) < 0 && newSize.Cmp(statusSize) <= 0 {
		errs = append(errs, field.Forbidden(field.NewPath("spec", "resources", "requests", "storage"), "field can not be less than status.capacity"))
	}
	errs = append(errs, apimachineryvalidation.ValidateImmutableField(pvc.Spec.VolumeMode, old.Spec.VolumeMode, field.NewPath("volumeMode"))...)
	if old.Spec.VolumeAttributesClassName != nil && !equality.Semantic.DeepEqual(old.Spec.VolumeAttributesClassName, pvc.Spec.VolumeAttributesClassName) {
		vac := field.NewPath("spec", "volumeAttributesClassName")
		if pvc.Spec.VolumeAttributesClassName == nil {
			errs = append(errs, field.Forbidden(vac, "update from non-nil value to nil is forbidden"))
		} else if *pvc.Spec.VolumeAttributesClassName == "" {
			errs = append(errs, field.Forbidden(vac, "update from non-nil value to an empty string is forbidden"))
		}
	}
	return errs
}

// allowStorageClassUpgrade lets storageClassName replace the beta
// annotation with the same class, or be set where none was (the default
// class assigned later), by aligning newSpec with the old one; otherwise
// the annotation is immutable.
func allowStorageClassUpgrade(pvc, old *v1.PersistentVolumeClaim, newSpec *v1.PersistentVolumeClaimSpec) field.ErrorList {
	oldAnn, oldHas := old.Annotations[v1.BetaStorageClassAnnotation]
	newAnn, newHas := pvc.Annotations[v1.BetaStorageClassAnnotation]
	oldName, newName := old.Spec.StorageClassName, pvc.Spec.StorageClassName
	if oldHas && oldName == nil && newName != nil && *newName == oldAnn && (!newHas || newAnn == oldAnn) {
		newSpec.StorageClassName = nil
		return nil
	}
	var errs field.ErrorList
	if newAnn != oldAnn {
		errs = append(errs, field.Invalid(field.NewPath("metadata").Child("annotations", v1.BetaStorageClassAnnotation), newAnn, "field is immutable"))
	}
	if newName != nil && oldName == nil && (!oldHas || *newName == oldAnn) {
		newSpec.StorageClassName = nil
	}
	return errs
}

var resizeStatuses = sets.New(v1.PersistentVolumeClaimControllerResizeInProgress, v1.PersistentVolumeClaimControllerResizeInfeasible,
	v1.PersistentVolumeClaimNodeResizePending, v1.PersistentVolumeClaimNodeResizeInProgress, v1.PersistentVolumeClaimNodeResizeInfeasible)

// validatePersistentVolumeClaimStatusUpdate; "Spec" is capitalised
// upstream too.
func validatePersistentVolumeClaimStatusUpdate(pvc, old *v1.PersistentVolumeClaim) field.ErrorList {
	errs := validateMetaUpdate(&pvc.ObjectMeta, &old.ObjectMeta)
	if pvc.ResourceVersion == "" {
		errs = append(errs, field.Required(field.NewPath("resourceVersion"), ""))
	}
	if len(pvc.Spec.AccessModes) == 0 {
		errs = append(errs, field.Required(field.NewPath("Spec", "accessModes"), ""))
	}
	capPath := field.NewPath("status", "capacity")
	for _, name := range sortedResourceNames(pvc.Status.Capacity) {
		errs = append(errs, basicQuantity(pvc.Status.Capacity[name], capPath.Key(string(name)))...)
	}
	statusPath := field.NewPath("status", "allocatedResourceStatus")
	for name, st := range pvc.Status.AllocatedResourceStatuses {
		errs = append(errs, claimResourceKey(string(name), statusPath)...)
		if !resizeStatuses.Has(st) {
			errs = append(errs, field.NotSupported(statusPath, name, sets.List(resizeStatuses)))
		}
	}
	allocPath := field.NewPath("status", "allocatedResources")
	for _, name := range sortedResourceNames(pvc.Status.AllocatedResources) {
		if keyErrs := claimResourceKey(string(name), allocPath); len(keyErrs) > 0 {
			errs = append(errs, keyErrs...)
			continue
		}
		errs = append(errs, basicQuantity(pvc.Status.AllocatedResources[name], allocPath.Key(string(name)))...)
	}
	return errs
}

// claimResourceKey: a qualified name, and of the native resources only
// storage.
func claimResourceKey(name string, p *field.Path) field.ErrorList {
	if errs := qualifiedName(name, p); len(errs) > 0 {
		return errs
	}
	if isNativeResourceName(name) && name != string(v1.ResourceStorage) {
		return field.ErrorList{field.NotSupported(p, name, []v1.ResourceName{v1.ResourceStorage})}
	}
	return nil
}

// isNativeResourceName: unprefixed or in the kubernetes.io domain.
func isNativeResourceName(name string) bool {
	domain, _, prefixed := strings.Cut(name, "/")
	return !prefixed || domain == "kubernetes.io" || strings.HasSuffix(domain, ".kubernetes.io")
}
