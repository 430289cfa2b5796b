package podspec

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/nodeagent/nodeagent/pkg/podutil"
)

var (
	supportedResizeResources = sets.New(v1.ResourceCPU, v1.ResourceMemory)
	supportedResizePolicies  = sets.New(v1.NotRequired, v1.RestartContainer)
)

// validateResizePolicy is upstream's validateResizePolicy: cpu and memory
// only, each once, NotRequired or RestartContainer, and NotRequired alone
// in a pod that never restarts its containers.
func validateResizePolicy(policies []v1.ContainerResizePolicy, podRestart v1.RestartPolicy, p *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	seen := sets.New[v1.ResourceName]()
	for i, rp := range policies {
		if seen.Has(rp.ResourceName) {
			allErrs = append(allErrs, field.Duplicate(p.Index(i), rp.ResourceName))
		}
		seen.Insert(rp.ResourceName)
		switch {
		case rp.ResourceName == "":
			allErrs = append(allErrs, field.Required(p, ""))
		case !supportedResizeResources.Has(rp.ResourceName):
			allErrs = append(allErrs, field.NotSupported(p, rp.ResourceName, sets.List(supportedResizeResources)))
		}
		switch {
		case rp.RestartPolicy == "":
			allErrs = append(allErrs, field.Required(p, ""))
		case !supportedResizePolicies.Has(rp.RestartPolicy):
			allErrs = append(allErrs, field.NotSupported(p, rp.RestartPolicy, sets.List(supportedResizePolicies)))
		}
		if podRestart == v1.RestartPolicyNever && rp.RestartPolicy != v1.NotRequired {
			allErrs = append(allErrs, field.Invalid(p, rp.RestartPolicy, "must be 'NotRequired' when `restartPolicy` is 'Never'"))
		}
	}
	return allErrs
}

// ValidateResize checks an update through the pod's resize subresource,
// once everything but the containers' resources and resize policies has
// been put back from oldPod, as upstream's ValidatePodResize: the new pod
// is valid, static, Windows and pod-level-resources pods are not resized,
// the QoS class stays, requests and limits are not removed, and only cpu
// and memory change. Memory limits may go down whatever the resizePolicy
// since v1.34 (kubernetes#133012): the node checks the usage first.
func ValidateResize(newPod, oldPod *v1.Pod) field.ErrorList {
	metaPath := field.NewPath("metadata")
	allErrs := apimachineryvalidation.ValidateObjectMetaUpdate(&newPod.ObjectMeta, &oldPod.ObjectMeta, metaPath)
	allErrs = append(allErrs, validatePod(newPod)...)
	root := field.NewPath("")
	if hasPodLevelResources(oldPod) || hasPodLevelResources(newPod) {
		return field.ErrorList{field.Forbidden(root, "pods with pod-level resources cannot be resized")}
	}
	if _, ok := oldPod.Annotations[v1.MirrorPodAnnotationKey]; ok {
		return field.ErrorList{field.Forbidden(root, "static pods cannot be resized")}
	}
	if oldPod.Spec.OS != nil && oldPod.Spec.OS.Name == v1.Windows {
		return field.ErrorList{field.Forbidden(root, "windows pods cannot be resized")}
	}
	spec := field.NewPath("spec")
	if podQOS(oldPod) != podutil.ComputeQOS(newPod) {
		allErrs = append(allErrs, field.Invalid(spec, newPod.Status.QOSClass, "Pod QOS Class may not change as a result of resizing"))
	}
	if !resizeSupported(oldPod) {
		allErrs = append(allErrs, field.Forbidden(spec, "Pod running on node without support for resize"))
	}
	for i := range oldPod.Spec.InitContainers {
		if i < len(newPod.Spec.InitContainers) && podutil.IsSidecar(&oldPod.Spec.InitContainers[i]) {
			c := &newPod.Spec.InitContainers[i]
			allErrs = append(allErrs, validateContainerResize(&c.Resources, &oldPod.Spec.InitContainers[i].Resources,
				spec.Child("initContainers").Index(i).Child("resources"))...)
		}
	}
	for i := range oldPod.Spec.Containers {
		if i < len(newPod.Spec.Containers) {
			c := &newPod.Spec.Containers[i]
			allErrs = append(allErrs, validateContainerResize(&c.Resources, &oldPod.Spec.Containers[i].Resources,
				spec.Child("containers").Index(i).Child("resources"))...)
		}
	}
	allErrs = append(allErrs, validateOnlyCPUMemoryChanged(newPod, oldPod, spec)...)
	return allErrs
}

func hasPodLevelResources(pod *v1.Pod) bool {
	r := pod.Spec.Resources
	return r != nil && len(r.Requests)+len(r.Limits) > 0
}

// podQOS is the class set at creation (upstream's GetPodQOS), computed for
// a pod stored without one.
func podQOS(pod *v1.Pod) v1.PodQOSClass {
	if pod.Status.QOSClass != "" {
		return pod.Status.QOSClass
	}
	return podutil.ComputeQOS(pod)
}

// resizeSupported is upstream's version-skew check: a pod whose running
// container reports no resources runs on a node that does not resize.
func resizeSupported(pod *v1.Pod) bool {
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.State.Running != nil {
			return cs.Resources != nil
		}
	}
	return true
}

func validateContainerResize(cur, old *v1.ResourceRequirements, p *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if resourcesRemoved(cur.Requests, old.Requests) {
		allErrs = append(allErrs, field.Forbidden(p.Child("requests"), "resource requests cannot be removed"))
	}
	if resourcesRemoved(cur.Limits, old.Limits) {
		allErrs = append(allErrs, field.Forbidden(p.Child("limits"), "resource limits cannot be removed"))
	}
	return allErrs
}

func resourcesRemoved(cur, old v1.ResourceList) bool {
	for name := range old {
		if _, ok := cur[name]; !ok {
			return true
		}
	}
	return false
}

// validateOnlyCPUMemoryChanged: with the cpu and memory entries put back
// from the old containers, nothing differs (upstream compares containers
// one by one first, then the whole spec).
func validateOnlyCPUMemoryChanged(newPod, oldPod *v1.Pod, spec *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	munged := newPod.Spec.DeepCopy()
	for i := range munged.Containers {
		if i >= len(oldPod.Spec.Containers) {
			break
		}
		keepOldCPUMemory(&munged.Containers[i], &oldPod.Spec.Containers[i])
		if !equality.Semantic.DeepEqual(munged.Containers[i], oldPod.Spec.Containers[i]) {
			allErrs = append(allErrs, field.Forbidden(spec, "only cpu and memory resources are mutable"))
		}
	}
	for i := range munged.InitContainers {
		if i >= len(oldPod.Spec.InitContainers) {
			break
		}
		c, old := &munged.InitContainers[i], &oldPod.Spec.InitContainers[i]
		if !podutil.IsSidecar(c) {
			if !equality.Semantic.DeepEqual(*c, *old) {
				allErrs = append(allErrs, field.Forbidden(spec, "resources for non-sidecar init containers are immutable"))
			}
			continue
		}
		keepOldCPUMemory(c, old)
		if !equality.Semantic.DeepEqual(*c, *old) {
			allErrs = append(allErrs, field.Forbidden(spec, "only cpu and memory resources for sidecar containers are mutable"))
		}
	}
	if len(allErrs) == 0 && !equality.Semantic.DeepEqual(*munged, oldPod.Spec) {
		allErrs = append(allErrs, field.Forbidden(spec, "only cpu and memory resources are mutable"))
	}
	return allErrs
}

// keepOldCPUMemory is upstream's dropCPUMemoryResourcesFromContainer: the
// container's cpu and memory requests and limits become the old ones.
func keepOldCPUMemory(c, old *v1.Container) {
	keep := func(cur, prev v1.ResourceList) v1.ResourceList {
		if prev == nil {
			return nil
		}
		out := v1.ResourceList{}
		for name, q := range cur {
			if name != v1.ResourceCPU && name != v1.ResourceMemory {
				out[name] = q
			}
		}
		for _, name := range []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory} {
			if q, ok := prev[name]; ok {
				out[name] = q
			}
		}
		return out
	}
	c.Resources = v1.ResourceRequirements{Limits: keep(c.Resources.Limits, old.Resources.Limits), Requests: keep(c.Resources.Requests, old.Resources.Requests)}
}
