package podspec

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/diff"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ValidateEphemeralContainersUpdate checks an update through the pod's
// ephemeralcontainers subresource, once everything but
// spec.ephemeralContainers has been put back from oldPod: the new pod must
// be valid (which covers the new containers: unique names, a target that
// is a regular or init container, no ports, probes, lifecycle or
// resources) and existing ephemeral containers may be neither removed nor
// changed, as upstream's ValidatePodEphemeralContainersUpdate.
func ValidateEphemeralContainersUpdate(newPod, oldPod *v1.Pod) field.ErrorList {
	metaPath := field.NewPath("metadata")
	allErrs := apimachineryvalidation.ValidateObjectMetaUpdate(&newPod.ObjectMeta, &oldPod.ObjectMeta, metaPath)
	allErrs = append(allErrs, validatePod(newPod)...)
	allErrs = append(allErrs, validateMirrorAnnotationUpdate(newPod.Annotations, oldPod.Annotations, metaPath.Child("annotations"))...)
	// The node runs a static pod from its manifest, never from the API
	// object, so an ephemeral container added here would never run
	// (kubernetes#113935). Upstream answers with this error alone.
	if _, ok := oldPod.Annotations[v1.MirrorPodAnnotationKey]; ok {
		return field.ErrorList{field.Forbidden(field.NewPath(""), "static pods do not support ephemeral containers")}
	}
	return append(allErrs, validateEphemeralContainersKept(newPod.Spec.EphemeralContainers, oldPod.Spec.EphemeralContainers)...)
}

// validateEphemeralContainersKept: every old ephemeral container is still
// there, unchanged. Patches do not keep the order, so containers are
// matched by name.
func validateEphemeralContainersKept(cur, old []v1.EphemeralContainer) field.ErrorList {
	p := field.NewPath("spec", "ephemeralContainers")
	byName := make(map[string]*v1.EphemeralContainer, len(cur))
	for i := range cur {
		byName[cur[i].Name] = &cur[i]
	}
	var allErrs field.ErrorList
	for _, o := range old {
		n, ok := byName[o.Name]
		switch {
		case !ok:
			allErrs = append(allErrs, field.Forbidden(p, fmt.Sprintf("existing ephemeral containers %q may not be removed\n", o.Name)))
		case !equality.Semantic.DeepEqual(o, *n):
			allErrs = append(allErrs, field.Forbidden(p, fmt.Sprintf("existing ephemeral containers %q may not be changed\n%v", o.Name, diff.Diff(o, *n))))
		}
	}
	return allErrs
}
