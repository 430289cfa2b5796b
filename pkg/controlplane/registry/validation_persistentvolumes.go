package registry

import (
	"fmt"
	"path"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/diff"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/nodeagent/nodeagent/pkg/podspec"
)

// PersistentVolume validation, as upstream's ValidatePersistentVolume and
// friends in pkg/apis/core/validation, with upstream's messages.

var (
	supportedAccessModes     = sets.New(v1.ReadWriteOnce, v1.ReadOnlyMany, v1.ReadWriteMany, v1.ReadWriteOncePod)
	supportedReclaimPolicies = sets.New(v1.PersistentVolumeReclaimDelete, v1.PersistentVolumeReclaimRecycle,
		v1.PersistentVolumeReclaimRetain)
	supportedVolumeModes   = sets.New(v1.PersistentVolumeBlock, v1.PersistentVolumeFilesystem)
	supportedHostPathTypes = sets.New(v1.HostPathUnset, v1.HostPathDirectoryOrCreate, v1.HostPathDirectory,
		v1.HostPathFileOrCreate, v1.HostPathFile, v1.HostPathSocket, v1.HostPathCharDev, v1.HostPathBlockDev)
)

const moreThanOneVolumeType = "may not specify more than 1 volume type"

func validatePersistentVolume(pv *v1.PersistentVolume) field.ErrorList {
	errs := validateMeta(&pv.ObjectMeta, false, apimachineryvalidation.NameIsDNSSubdomain)
	return append(errs, validatePersistentVolumeSpec(&pv.Spec, field.NewPath("spec"))...)
}

func validatePersistentVolumeSpec(spec *v1.PersistentVolumeSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(spec.AccessModes) == 0 {
		errs = append(errs, field.Required(p.Child("accessModes"), ""))
	}
	errs = append(errs, validateAccessModes(spec.AccessModes, p.Child("accessModes"))...)
	errs = append(errs, validateVolumeCapacity(spec.Capacity, p.Child("capacity"))...)
	if policy := spec.PersistentVolumeReclaimPolicy; policy != "" && !supportedReclaimPolicies.Has(policy) {
		errs = append(errs, field.NotSupported(p.Child("persistentVolumeReclaimPolicy"), policy, sets.List(supportedReclaimPolicies)))
	}
	affinitySet, affinityErrs := validateVolumeNodeAffinity(spec.NodeAffinity, p.Child("nodeAffinity"))
	errs = append(errs, affinityErrs...)
	errs = append(errs, validatePersistentVolumeSource(spec, affinitySet, p)...)
	if spec.HostPath != nil && path.Clean(spec.HostPath.Path) == "/" && spec.PersistentVolumeReclaimPolicy == v1.PersistentVolumeReclaimRecycle {
		errs = append(errs, field.Forbidden(p.Child("persistentVolumeReclaimPolicy"), "may not be 'recycle' for a hostPath mount of '/'"))
	}
	if spec.StorageClassName != "" {
		errs = append(errs, className(spec.StorageClassName, p.Child("storageClassName"))...)
	}
	if spec.VolumeMode != nil && !supportedVolumeModes.Has(*spec.VolumeMode) {
		errs = append(errs, field.NotSupported(p.Child("volumeMode"), *spec.VolumeMode, sets.List(supportedVolumeModes)))
	}
	if vac := spec.VolumeAttributesClassName; vac != nil {
		if *vac == "" {
			errs = append(errs, field.Required(p.Child("volumeAttributesClassName"), "an empty string is disallowed"))
		} else {
			errs = append(errs, className(*vac, p.Child("volumeAttributesClassName"))...)
		}
		if spec.CSI == nil {
			errs = append(errs, field.Required(p.Child("csi"), "has to be specified when using volumeAttributesClassName"))
		}
	}
	return errs
}

// validateAccessModes checks each mode and that ReadWriteOncePod stands alone.
func validateAccessModes(modes []v1.PersistentVolumeAccessMode, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	rwop, other := false, false
	for _, mode := range modes {
		switch {
		case !supportedAccessModes.Has(mode):
			errs = append(errs, field.NotSupported(p, mode, sets.List(supportedAccessModes)))
		case mode == v1.ReadWriteOncePod:
			rwop = true
		default:
			other = true
		}
	}
	if rwop && other {
		errs = append(errs, field.Forbidden(p, "may not use ReadWriteOncePod with other access modes"))
	}
	return errs
}

// validateVolumeCapacity: exactly one resource, storage, and positive.
func validateVolumeCapacity(capacity v1.ResourceList, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(capacity) == 0 {
		errs = append(errs, field.Required(p, ""))
	}
	if _, ok := capacity[v1.ResourceStorage]; !ok || len(capacity) > 1 {
		errs = append(errs, field.NotSupported(p, capacity, []v1.ResourceName{v1.ResourceStorage}))
	}
	for _, name := range sortedResourceNames(capacity) {
		q := capacity[name]
		errs = append(errs, basicQuantity(q, p.Key(string(name)))...)
		errs = append(errs, positiveQuantity(q, p.Key(string(name)))...)
	}
	return errs
}

// pvSource is one volume type of a PersistentVolumeSource.
type pvSource struct {
	name     string
	set      bool
	validate func(p *field.Path) field.ErrorList // nil: only counted
}

// pvSources lists the volume types in upstream's order. Only the types
// a node agent here can use are checked in depth.
func pvSources(s *v1.PersistentVolumeSource) []pvSource {
	return []pvSource{
		{"hostPath", s.HostPath != nil, func(p *field.Path) field.ErrorList { return validatePVHostPath(s.HostPath, p) }},
		{"gcePersistentDisk", s.GCEPersistentDisk != nil, nil},
		{"awsElasticBlockStore", s.AWSElasticBlockStore != nil, nil},
		{"glusterfs", s.Glusterfs != nil, nil},
		{"flocker", s.Flocker != nil, nil},
		{"nfs", s.NFS != nil, func(p *field.Path) field.ErrorList { return validatePVNFS(s.NFS, p) }},
		{"rbd", s.RBD != nil, nil},
		{"quobyte", s.Quobyte != nil, nil},
		{"cephFS", s.CephFS != nil, nil},
		{"iscsi", s.ISCSI != nil, nil},
		{"cinder", s.Cinder != nil, nil},
		{"fc", s.FC != nil, nil},
		{"flexVolume", s.FlexVolume != nil, nil},
		{"azureFile", s.AzureFile != nil, nil},
		{"vsphereVolume", s.VsphereVolume != nil, nil},
		{"photonPersistentDisk", s.PhotonPersistentDisk != nil, nil},
		{"portworxVolume", s.PortworxVolume != nil, nil},
		{"azureDisk", s.AzureDisk != nil, nil},
		{"scaleIO", s.ScaleIO != nil, nil},
		{"local", s.Local != nil, func(p *field.Path) field.ErrorList { return validatePVLocal(s.Local, p) }},
		{"storageos", s.StorageOS != nil, nil},
		{"csi", s.CSI != nil, func(p *field.Path) field.ErrorList { return validatePVCSI(s.CSI, p) }},
	}
}

// validatePersistentVolumeSource: exactly one volume type; a local volume
// needs node affinity (the scheduler places its pods by it).
func validatePersistentVolumeSource(spec *v1.PersistentVolumeSpec, affinitySet bool, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	n := 0
	for _, src := range pvSources(&spec.PersistentVolumeSource) {
		switch {
		case !src.set:
			continue
		case src.name == "flexVolume":
			n++ // upstream counts it without the duplicate check
			continue
		case n > 0:
			errs = append(errs, field.Forbidden(p.Child(src.name), moreThanOneVolumeType))
			continue
		}
		n++
		if src.validate != nil {
			errs = append(errs, src.validate(p.Child(src.name))...)
		}
		if src.name == "local" && !affinitySet {
			errs = append(errs, field.Required(p.Child("nodeAffinity"), "Local volume requires node affinity"))
		}
	}
	if n == 0 {
		errs = append(errs, field.Required(p, "must specify a volume type"))
	}
	return errs
}

func validatePVHostPath(hp *v1.HostPathVolumeSource, p *field.Path) field.ErrorList {
	if hp.Path == "" {
		return field.ErrorList{field.Required(p.Child("path"), "")}
	}
	errs := noBacksteps(hp.Path, p.Child("path"))
	if hp.Type != nil && !supportedHostPathTypes.Has(*hp.Type) {
		errs = append(errs, field.NotSupported(p.Child("type"), hp.Type, sets.List(supportedHostPathTypes)))
	}
	return errs
}

func validatePVLocal(l *v1.LocalVolumeSource, p *field.Path) field.ErrorList {
	if l.Path == "" {
		return field.ErrorList{field.Required(p.Child("path"), "")}
	}
	return noBacksteps(l.Path, p.Child("path"))
}

func validatePVNFS(nfs *v1.NFSVolumeSource, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if nfs.Server == "" {
		errs = append(errs, field.Required(p.Child("server"), ""))
	}
	if nfs.Path == "" {
		errs = append(errs, field.Required(p.Child("path"), ""))
	}
	if !path.IsAbs(nfs.Path) {
		errs = append(errs, field.Invalid(p.Child("path"), nfs.Path, "must be an absolute path"))
	}
	return errs
}

func validatePVCSI(csi *v1.CSIPersistentVolumeSource, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	driver := p.Child("driver")
	if csi.Driver == "" {
		errs = append(errs, field.Required(driver, ""))
	}
	if len(csi.Driver) > 63 {
		errs = append(errs, field.TooLong(driver, "", 63))
	}
	errs = append(errs, podspec.InvalidAll(driver, csi.Driver, validation.IsDNS1123Subdomain(strings.ToLower(csi.Driver)))...)
	if csi.VolumeHandle == "" {
		errs = append(errs, field.Required(p.Child("volumeHandle"), ""))
	}
	return errs
}

func noBacksteps(target string, p *field.Path) field.ErrorList {
	for _, part := range strings.Split(target, "/") {
		if part == ".." {
			return field.ErrorList{field.Invalid(p, target, "must not contain '..'")}
		}
	}
	return nil
}

// validatePersistentVolumeUpdate holds the update-only rules (Validate runs
// too): the volume source, volume mode and node affinity are immutable.
// The paths "volumeMode" and "nodeAffinity" lack "spec." upstream as well.
func validatePersistentVolumeUpdate(pv, old *v1.PersistentVolume) field.ErrorList {
	errs := validateMetaUpdate(&pv.ObjectMeta, &old.ObjectMeta)
	src := pv.Spec.PersistentVolumeSource
	// An expansion secret may be added later.
	if old.Spec.CSI != nil && old.Spec.CSI.ControllerExpandSecretRef == nil && src.CSI != nil && src.CSI.ControllerExpandSecretRef != nil {
		src = *src.DeepCopy()
		src.CSI.ControllerExpandSecretRef = nil
	}
	if !equality.Semantic.DeepEqual(src, old.Spec.PersistentVolumeSource) {
		errs = append(errs, field.Forbidden(field.NewPath("spec", "persistentvolumesource"),
			fmt.Sprintf("spec.persistentvolumesource is immutable after creation\n%v", diff.Diff(old.Spec.PersistentVolumeSource, src))))
	}
	errs = append(errs, apimachineryvalidation.ValidateImmutableField(pv.Spec.VolumeMode, old.Spec.VolumeMode, field.NewPath("volumeMode"))...)
	if old.Spec.NodeAffinity != nil {
		errs = append(errs, apimachineryvalidation.ValidateImmutableField(pv.Spec.NodeAffinity, old.Spec.NodeAffinity, field.NewPath("nodeAffinity"))...)
	}
	if old.Spec.VolumeAttributesClassName != nil && pv.Spec.VolumeAttributesClassName == nil {
		errs = append(errs, field.Forbidden(field.NewPath("spec", "volumeAttributesClassName"), "update from non-nil value to nil is forbidden"))
	}
	return errs
}

// validatePersistentVolumeStatusUpdate: status writes are free-form upstream.
func validatePersistentVolumeStatusUpdate(pv, old *v1.PersistentVolume) field.ErrorList {
	errs := validateMetaUpdate(&pv.ObjectMeta, &old.ObjectMeta)
	if pv.ResourceVersion == "" {
		errs = append(errs, field.Required(field.NewPath("resourceVersion"), ""))
	}
	return errs
}

// className is upstream's ValidateClassName: a DNS subdomain.
func className(name string, p *field.Path) field.ErrorList {
	return podspec.InvalidAll(p, name, apimachineryvalidation.NameIsDNSSubdomain(name, false))
}

func basicQuantity(q resource.Quantity, p *field.Path) field.ErrorList {
	if q.Value() < 0 {
		return field.ErrorList{field.Invalid(p, q.String(), "must be a valid resource quantity")}
	}
	return nil
}

func positiveQuantity(q resource.Quantity, p *field.Path) field.ErrorList {
	if q.Cmp(resource.Quantity{}) <= 0 {
		return field.ErrorList{field.Invalid(p, q.String(), "must be greater than zero")}
	}
	return nil
}

func sortedResourceNames(list v1.ResourceList) []v1.ResourceName {
	names := make([]v1.ResourceName, 0, len(list))
	for n := range list {
		names = append(names, n)
	}
	return sets.List(sets.New(names...))
}

// validateVolumeNodeAffinity reports whether an affinity is set, and its
// errors.
func validateVolumeNodeAffinity(a *v1.VolumeNodeAffinity, p *field.Path) (bool, field.ErrorList) {
	if a == nil {
		return false, nil
	}
	if a.Required == nil {
		return true, field.ErrorList{field.Required(p.Child("required"), "must specify required node constraints")}
	}
	return true, podspec.ValidateNodeSelector(a.Required, p.Child("required"))
}
