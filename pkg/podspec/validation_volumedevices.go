package podspec

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// validateVolumeDevices checks a container's volumeDevices as upstream's
// ValidateVolumeDevices: a raw block device can come only from a claim
// (a PVC or a generic ephemeral volume), and neither its volume nor its
// path may also be one of the container's volumeMounts.
func validateVolumeDevices(c *v1.Container, vols map[string]v1.VolumeSource, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	mounts := make(map[string]string, len(c.VolumeMounts)) // volume name -> mountPath
	for _, m := range c.VolumeMounts {
		mounts[m.Name] = m.MountPath
	}
	paths, names := sets.New[string](), sets.New[string]()
	for i, d := range c.VolumeDevices {
		p := fldPath.Index(i)
		if d.Name == "" {
			allErrs = append(allErrs, field.Required(p.Child("name"), ""))
		}
		if names.Has(d.Name) {
			allErrs = append(allErrs, field.Invalid(p.Child("name"), d.Name, "must be unique"))
		}
		if src, found := vols[d.Name]; !found {
			allErrs = append(allErrs, field.NotFound(p.Child("name"), d.Name))
		} else if src.PersistentVolumeClaim == nil && src.Ephemeral == nil {
			allErrs = append(allErrs, field.Invalid(p.Child("name"), d.Name,
				"can only use volume source type of PersistentVolumeClaim or Ephemeral for block mode"))
		}
		if d.DevicePath == "" {
			allErrs = append(allErrs, field.Required(p.Child("devicePath"), ""))
		}
		if paths.Has(d.DevicePath) {
			allErrs = append(allErrs, field.Invalid(p.Child("devicePath"), d.DevicePath, "must be unique"))
		}
		// Upstream keeps a path with backsteps out of the uniqueness set.
		if d.DevicePath != "" && len(validatePathNoBacksteps(d.DevicePath, p)) > 0 {
			allErrs = append(allErrs, field.Invalid(p.Child("devicePath"), d.DevicePath, "can not contain backsteps ('..')"))
		} else {
			paths.Insert(d.DevicePath)
		}
		if _, mounted := mounts[d.Name]; mounted {
			allErrs = append(allErrs, field.Invalid(p.Child("name"), d.Name, "must not already exist in volumeMounts"))
		}
		if hasPath(mounts, d.DevicePath) {
			allErrs = append(allErrs, field.Invalid(p.Child("devicePath"), d.DevicePath, "must not already exist as a path in volumeMounts"))
		}
		if d.Name != "" {
			names.Insert(d.Name)
		}
	}
	return allErrs
}

// validateMountNotDevice is the volumeMounts side of the same overlap
// check (upstream's ValidateVolumeMounts), for mount m at path p.
func validateMountNotDevice(m v1.VolumeMount, devices []v1.VolumeDevice, p *field.Path) field.ErrorList {
	byName := make(map[string]string, len(devices)) // volume name -> devicePath
	for _, d := range devices {
		byName[d.Name] = d.DevicePath
	}
	var allErrs field.ErrorList
	if _, ok := byName[m.Name]; ok {
		allErrs = append(allErrs, field.Invalid(p.Child("name"), m.Name, "must not already exist in volumeDevices"))
	}
	if hasPath(byName, m.MountPath) {
		allErrs = append(allErrs, field.Invalid(p.Child("mountPath"), m.MountPath, "must not already exist as a path in volumeDevices"))
	}
	return allErrs
}

func hasPath(byName map[string]string, path string) bool {
	for _, p := range byName {
		if p == path {
			return true
		}
	}
	return false
}
