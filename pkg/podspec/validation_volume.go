package podspec

import (
	"path"
	"path/filepath"
	"reflect"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

const fileModeErrorMsg = "must be a number between 0 and 0777 (octal), both inclusive"

// Field paths a downwardAPI volume item may project (subscripted
// metadata.labels['k'] / metadata.annotations['k'] are accepted as well).
var volumeFieldPaths = sets.New("metadata.name", "metadata.namespace", "metadata.labels", "metadata.annotations", "metadata.uid")

// validateVolumes checks spec.volumes and returns the valid volumes by name,
// for volumeMounts to refer to.
func validateVolumes(volumes []v1.Volume, fldPath *field.Path) (map[string]v1.VolumeSource, field.ErrorList) {
	var allErrs field.ErrorList
	vols := map[string]v1.VolumeSource{}
	for i, vol := range volumes {
		idxPath := fldPath.Index(i)
		namePath := idxPath.Child("name")
		errs := validateVolumeSource(&vol.VolumeSource, idxPath)
		if vol.Name == "" {
			errs = append(errs, field.Required(namePath, ""))
		} else {
			errs = append(errs, dnsLabel(vol.Name, namePath)...)
		}
		if _, dup := vols[vol.Name]; dup {
			errs = append(errs, field.Duplicate(namePath, vol.Name))
		}
		if len(errs) == 0 {
			vols[vol.Name] = vol.VolumeSource
		}
		allErrs = append(allErrs, errs...)
	}
	return vols, allErrs
}

// setVolumeSources returns the JSON names of the sources set in src, in the
// order upstream checks them (emptyDir first, then declaration order).
func setVolumeSources(src *v1.VolumeSource) []string {
	var names []string
	if src.EmptyDir != nil {
		names = append(names, "emptyDir")
	}
	v := reflect.ValueOf(src).Elem()
	for i := 0; i < v.NumField(); i++ {
		name, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("json"), ",")
		if name != "emptyDir" && !v.Field(i).IsNil() {
			names = append(names, name)
		}
	}
	return names
}

func validateVolumeSource(src *v1.VolumeSource, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	names := setVolumeSources(src)
	if len(names) == 0 {
		return field.ErrorList{field.Required(fldPath, "must specify a volume type")}
	}
	for _, extra := range names[1:] {
		allErrs = append(allErrs, field.Forbidden(fldPath.Child(extra), "may not specify more than 1 volume type"))
	}
	p := fldPath.Child(names[0])
	switch {
	case src.EmptyDir != nil:
		if s := src.EmptyDir.SizeLimit; s != nil && s.Sign() < 0 {
			allErrs = append(allErrs, field.Forbidden(p.Child("sizeLimit"), "SizeLimit field must be a valid resource quantity"))
		}
	case src.HostPath != nil:
		allErrs = append(allErrs, validateHostPath(src.HostPath, p)...)
	case src.Secret != nil:
		if src.Secret.SecretName == "" {
			allErrs = append(allErrs, field.Required(p.Child("secretName"), ""))
		}
		allErrs = append(allErrs, validateMode(src.Secret.DefaultMode, p.Child("defaultMode"))...)
		allErrs = append(allErrs, validateKeysToPaths(src.Secret.Items, p.Child("items"))...)
	case src.ConfigMap != nil:
		if src.ConfigMap.Name == "" {
			allErrs = append(allErrs, field.Required(p.Child("name"), ""))
		}
		allErrs = append(allErrs, validateMode(src.ConfigMap.DefaultMode, p.Child("defaultMode"))...)
		allErrs = append(allErrs, validateKeysToPaths(src.ConfigMap.Items, p.Child("items"))...)
	case src.DownwardAPI != nil:
		allErrs = append(allErrs, validateMode(src.DownwardAPI.DefaultMode, p.Child("defaultMode"))...)
		for _, f := range src.DownwardAPI.Items {
			// Upstream reports item errors without the item index.
			allErrs = append(allErrs, validateDownwardAPIFile(&f, p)...)
		}
	case src.Projected != nil:
		allErrs = append(allErrs, validateMode(src.Projected.DefaultMode, p.Child("defaultMode"))...)
		allErrs = append(allErrs, validateProjectionSources(src.Projected.Sources, p)...)
	case src.PersistentVolumeClaim != nil:
		if src.PersistentVolumeClaim.ClaimName == "" {
			allErrs = append(allErrs, field.Required(p.Child("claimName"), ""))
		}
	case src.NFS != nil:
		if src.NFS.Server == "" {
			allErrs = append(allErrs, field.Required(p.Child("server"), ""))
		}
		if src.NFS.Path == "" {
			allErrs = append(allErrs, field.Required(p.Child("path"), ""))
		}
		if !path.IsAbs(src.NFS.Path) {
			allErrs = append(allErrs, field.Invalid(p.Child("path"), src.NFS.Path, "must be an absolute path"))
		}
	case src.CSI != nil:
		allErrs = append(allErrs, validateCSIDriverName(src.CSI.Driver, p.Child("driver"))...)
		if ref := src.CSI.NodePublishSecretRef; ref != nil && ref.Name == "" {
			allErrs = append(allErrs, field.Required(p.Child("nodePublishSecretRef", "name"), ""))
		}
	case src.Image != nil:
		if src.Image.Reference == "" {
			allErrs = append(allErrs, field.Required(p.Child("reference"), ""))
		}
		allErrs = append(allErrs, validatePullPolicy(src.Image.PullPolicy, p.Child("pullPolicy"))...)
	}
	return allErrs
}

var supportedHostPathTypes = sets.New(v1.HostPathUnset, v1.HostPathDirectoryOrCreate, v1.HostPathDirectory,
	v1.HostPathFileOrCreate, v1.HostPathFile, v1.HostPathSocket, v1.HostPathCharDev, v1.HostPathBlockDev)

func validateHostPath(hp *v1.HostPathVolumeSource, fldPath *field.Path) field.ErrorList {
	if hp.Path == "" {
		return field.ErrorList{field.Required(fldPath.Child("path"), "")}
	}
	allErrs := validatePathNoBacksteps(hp.Path, fldPath.Child("path"))
	if hp.Type != nil && !supportedHostPathTypes.Has(*hp.Type) {
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("type"), hp.Type, sets.List(supportedHostPathTypes)))
	}
	return allErrs
}

func validateCSIDriverName(name string, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if name == "" {
		allErrs = append(allErrs, field.Required(fldPath, ""))
	}
	if len(name) > 63 {
		allErrs = append(allErrs, field.TooLong(fldPath, "", 63))
	}
	for _, msg := range validation.IsDNS1123Subdomain(strings.ToLower(name)) {
		allErrs = append(allErrs, field.Invalid(fldPath, name, msg))
	}
	return allErrs
}

func validateMode(mode *int32, fldPath *field.Path) field.ErrorList {
	if mode != nil && (*mode > 0777 || *mode < 0) {
		return field.ErrorList{field.Invalid(fldPath, *mode, fileModeErrorMsg)}
	}
	return nil
}

func validateKeysToPaths(items []v1.KeyToPath, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for i, kp := range items {
		p := fldPath.Index(i)
		if kp.Key == "" {
			allErrs = append(allErrs, field.Required(p.Child("key"), ""))
		}
		if kp.Path == "" {
			allErrs = append(allErrs, field.Required(p.Child("path"), ""))
		}
		allErrs = append(allErrs, validateLocalNonReservedPath(kp.Path, p.Child("path"))...)
		allErrs = append(allErrs, validateMode(kp.Mode, p.Child("mode"))...)
	}
	return allErrs
}

func validateDownwardAPIFile(f *v1.DownwardAPIVolumeFile, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if f.Path == "" {
		allErrs = append(allErrs, field.Required(fldPath.Child("path"), ""))
	}
	allErrs = append(allErrs, validateLocalNonReservedPath(f.Path, fldPath.Child("path"))...)
	switch {
	case f.FieldRef != nil:
		allErrs = append(allErrs, validateFieldRef(f.FieldRef, volumeFieldPaths, fldPath.Child("fieldRef"))...)
		if f.ResourceFieldRef != nil {
			allErrs = append(allErrs, field.Invalid(fldPath, "resource", "fieldRef and resourceFieldRef can not be specified simultaneously"))
		}
	case f.ResourceFieldRef != nil:
		allErrs = append(allErrs, validateResourceFieldRef(f.ResourceFieldRef, fldPath.Child("resourceFieldRef"), true)...)
	default:
		allErrs = append(allErrs, field.Required(fldPath, "one of fieldRef and resourceFieldRef is required"))
	}
	return append(allErrs, validateMode(f.Mode, fldPath.Child("mode"))...)
}

func validateProjectionSources(sources []v1.VolumeProjection, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	paths := sets.New[string]()
	// Every projected file must land on its own path.
	claim := func(p, value string) {
		if p == "" {
			return
		}
		if paths.Has(p) {
			allErrs = append(allErrs, field.Invalid(fldPath, value, "conflicting duplicate paths"))
		}
		paths.Insert(p)
	}
	for i, src := range sources {
		srcPath := fldPath.Child("sources").Index(i)
		n := 0
		if s := src.Secret; s != nil {
			n++
			if s.Name == "" {
				allErrs = append(allErrs, field.Required(srcPath.Child("secret", "name"), ""))
			}
			allErrs = append(allErrs, validateKeysToPaths(s.Items, srcPath.Child("secret", "items"))...)
			for _, kp := range s.Items {
				claim(kp.Path, s.Name)
			}
		}
		if c := src.ConfigMap; c != nil {
			n++
			if c.Name == "" {
				allErrs = append(allErrs, field.Required(srcPath.Child("configMap", "name"), ""))
			}
			allErrs = append(allErrs, validateKeysToPaths(c.Items, srcPath.Child("configMap", "items"))...)
			for _, kp := range c.Items {
				claim(kp.Path, c.Name)
			}
		}
		if d := src.DownwardAPI; d != nil {
			n++
			for _, f := range d.Items {
				allErrs = append(allErrs, validateDownwardAPIFile(&f, srcPath.Child("downwardAPI"))...)
				claim(f.Path, f.Path)
			}
		}
		if t := src.ServiceAccountToken; t != nil {
			n++
			expPath := srcPath.Child("serviceAccountToken", "expirationSeconds")
			if exp := t.ExpirationSeconds; exp != nil && *exp < 10*60 {
				allErrs = append(allErrs, field.Invalid(expPath, *exp, "may not specify a duration less than 10 minutes"))
			} else if exp != nil && *exp > 1<<32 {
				allErrs = append(allErrs, field.Invalid(expPath, *exp, "may not specify a duration larger than 2^32 seconds"))
			}
			// Upstream reports these against the projected volume's own path.
			if t.Path == "" {
				allErrs = append(allErrs, field.Required(fldPath.Child("path"), ""))
			} else {
				allErrs = append(allErrs, validateLocalNonReservedPath(t.Path, fldPath.Child("path"))...)
			}
		}
		if src.ClusterTrustBundle != nil {
			n++ // counted, not validated further
		}
		if n > 1 {
			allErrs = append(allErrs, field.Forbidden(srcPath, "may not specify more than 1 volume type per source"))
		}
	}
	return allErrs
}

// validateLocalDescendingPath requires a relative path without ".." elements.
func validateLocalDescendingPath(p string, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if path.IsAbs(p) {
		allErrs = append(allErrs, field.Invalid(fldPath, p, "must be a relative path"))
	}
	return append(allErrs, validatePathNoBacksteps(p, fldPath)...)
}

func validatePathNoBacksteps(p string, fldPath *field.Path) field.ErrorList {
	for _, part := range strings.Split(filepath.ToSlash(p), "/") {
		if part == ".." {
			return field.ErrorList{field.Invalid(fldPath, p, "must not contain '..'")}
		}
	}
	return nil
}

// validateLocalNonReservedPath additionally forbids names starting with "..",
// which the kubelet's atomic writer reserves for itself.
func validateLocalNonReservedPath(p string, fldPath *field.Path) field.ErrorList {
	allErrs := validateLocalDescendingPath(p, fldPath)
	if strings.HasPrefix(p, "..") && !strings.HasPrefix(p, "../") {
		allErrs = append(allErrs, field.Invalid(fldPath, p, "must not start with '..'"))
	}
	return allErrs
}

var supportedMountPropagations = sets.New(v1.MountPropagationBidirectional, v1.MountPropagationHostToContainer, v1.MountPropagationNone)

var supportedRecursiveReadOnly = sets.New(v1.RecursiveReadOnlyDisabled, v1.RecursiveReadOnlyIfPossible, v1.RecursiveReadOnlyEnabled)

func validateVolumeMounts(c *v1.Container, vols map[string]v1.VolumeSource, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	mountPaths := sets.New[string]()
	for i, m := range c.VolumeMounts {
		p := fldPath.Index(i)
		if m.Name == "" {
			allErrs = append(allErrs, field.Required(p.Child("name"), ""))
		}
		_, found := vols[m.Name]
		if !found {
			allErrs = append(allErrs, field.NotFound(p.Child("name"), m.Name))
		}
		if m.MountPath == "" {
			allErrs = append(allErrs, field.Required(p.Child("mountPath"), ""))
		}
		if mountPaths.Has(m.MountPath) {
			allErrs = append(allErrs, field.Invalid(p.Child("mountPath"), m.MountPath, "must be unique"))
		}
		mountPaths.Insert(m.MountPath)
		allErrs = append(allErrs, validateMountNotDevice(m, c.VolumeDevices, p)...)
		// Upstream reports subPath, subPathExpr and mountPropagation problems
		// on volumeMounts.<field>, without the mount's index.
		if m.SubPath != "" {
			allErrs = append(allErrs, validateLocalDescendingPath(m.SubPath, fldPath.Child("subPath"))...)
		}
		if m.SubPathExpr != "" {
			if m.SubPath != "" {
				allErrs = append(allErrs, field.Invalid(p.Child("subPathExpr"), m.SubPathExpr, "subPathExpr and subPath are mutually exclusive"))
			}
			allErrs = append(allErrs, validateLocalDescendingPath(m.SubPathExpr, fldPath.Child("subPathExpr"))...)
		}
		if mp := m.MountPropagation; mp != nil {
			propPath := fldPath.Child("mountPropagation")
			if !supportedMountPropagations.Has(*mp) {
				allErrs = append(allErrs, field.NotSupported(propPath, *mp, sets.List(supportedMountPropagations)))
			}
			privileged := c.SecurityContext != nil && c.SecurityContext.Privileged != nil && *c.SecurityContext.Privileged
			if *mp == v1.MountPropagationBidirectional && !privileged {
				allErrs = append(allErrs, field.Forbidden(propPath, "Bidirectional mount propagation is available only to privileged containers"))
			}
		}
		allErrs = append(allErrs, validateRecursiveReadOnly(m, fldPath.Child("recursiveReadOnly"))...)
	}
	return allErrs
}

func validateRecursiveReadOnly(m v1.VolumeMount, fldPath *field.Path) field.ErrorList {
	if m.RecursiveReadOnly == nil || *m.RecursiveReadOnly == v1.RecursiveReadOnlyDisabled {
		return nil
	}
	if !supportedRecursiveReadOnly.Has(*m.RecursiveReadOnly) {
		return field.ErrorList{field.NotSupported(fldPath, *m.RecursiveReadOnly, sets.List(supportedRecursiveReadOnly))}
	}
	var allErrs field.ErrorList
	if !m.ReadOnly {
		allErrs = append(allErrs, field.Forbidden(fldPath, "may only be specified when readOnly is true"))
	}
	if m.MountPropagation != nil && *m.MountPropagation != v1.MountPropagationNone {
		allErrs = append(allErrs, field.Forbidden(fldPath, "may only be specified when mountPropagation is None or not specified"))
	}
	return allErrs
}
