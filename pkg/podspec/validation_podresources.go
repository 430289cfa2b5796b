package podspec

import (
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	resourcehelper "k8s.io/component-helpers/resource"
)

// validatePodLevelResources checks spec.resources (KEP-2837, on by
// default in v1.37) as upstream's validatePodResources: only cpu, memory
// and huge pages, the quantities and request/limit rules of containers,
// and consistency with the containers: the pod requests at least what
// they request in all, and no container's limit exceeds the pod's.
func validatePodLevelResources(spec *v1.PodSpec, fldPath *field.Path) field.ErrorList {
	r := spec.Resources
	if r == nil {
		return nil
	}
	if spec.OS != nil && spec.OS.Name == v1.Windows {
		return field.ErrorList{field.Forbidden(fldPath, "may not be set for a windows pod")}
	}
	var allErrs field.ErrorList
	supported := v1.ResourceRequirements{Limits: v1.ResourceList{}, Requests: v1.ResourceList{}}
	for _, l := range []struct {
		kind     string
		in, kept v1.ResourceList
	}{{"limits", r.Limits, supported.Limits}, {"requests", r.Requests, supported.Requests}} {
		for _, name := range sortedNames(l.in) {
			if !resourcehelper.IsSupportedPodLevelResource(name) {
				allErrs = append(allErrs, field.NotSupported(fldPath.Child(l.kind).Key(string(name)), name, []string{"cpu", "hugepages-", "memory"}))
				continue
			}
			l.kept[name] = l.in[name]
		}
	}
	allErrs = append(allErrs, validateResources(&supported, fldPath)...)
	return append(allErrs, podResourceConsistency(spec, fldPath)...)
}

// podResourceConsistency is upstream's validatePodResourceConsistency.
func podResourceConsistency(spec *v1.PodSpec, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	pod := &v1.Pod{Spec: *spec}
	aggReqs := resourcehelper.AggregateContainerRequests(pod, resourcehelper.PodResourcesOptions{})
	for _, name := range sortedNames(aggReqs) {
		podReq, ok := spec.Resources.Requests[name]
		if agg := aggReqs[name]; ok && agg.Cmp(podReq) > 0 {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("requests").Key(string(name)), podReq.String(),
				fmt.Sprintf("must be greater than or equal to aggregate container requests of %s", agg.String())))
		}
	}
	aggLims := resourcehelper.AggregateContainerLimits(pod, resourcehelper.PodResourcesOptions{})
	for _, name := range sortedNames(aggLims) {
		podLim, ok := spec.Resources.Limits[name]
		agg := aggLims[name]
		if strings.HasPrefix(string(name), v1.ResourceHugePagesPrefix) && ok && agg.Cmp(podLim) > 0 {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("limits").Key(string(name)), podLim.String(),
				fmt.Sprintf("must be greater than or equal to aggregate container limits of %s", agg.String())))
		}
	}
	for i, c := range spec.Containers {
		for _, name := range sortedNames(c.Resources.Limits) {
			podLim, ok := spec.Resources.Limits[name]
			if lim := c.Resources.Limits[name]; ok && lim.Cmp(podLim) > 0 {
				// The path is built from the pod-level resources' own, as upstream does.
				allErrs = append(allErrs, field.Invalid(fldPath.Child("containers").Index(i).Key(string(name)).Child("limits"), lim.String(),
					fmt.Sprintf("must be less than or equal to pod limits of %s", podLim.String())))
			}
		}
	}
	return allErrs
}
