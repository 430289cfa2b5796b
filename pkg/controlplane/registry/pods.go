package registry

import (
	"strconv"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/nodeagent/nodeagent/pkg/podspec"
	"github.com/nodeagent/nodeagent/pkg/podutil"
)

func (b *builder) pods() *Resource {
	return &Resource{
		GVK:          v1.SchemeGroupVersion.WithKind("Pod"),
		Plural:       "pods",
		Singular:     "pod",
		ShortNames:   []string{"po"},
		Categories:   categoriesAll,
		Namespaced:   true,
		Verbs:        allVerbs,
		Subresources: []string{"attach", "binding", "ephemeralcontainers", "eviction", "exec", "log", "portforward", "resize", "status"},
		New:          func() runtime.Object { return &v1.Pod{} },
		NewList:      func() runtime.Object { return &v1.PodList{} },

		Default:                hook(podspec.SetDefaults),
		PrepareForCreate:       hook(preparePodForCreate),
		PrepareForUpdate:       hook2(preparePodForUpdate),
		PrepareForStatusUpdate: hook2(preparePodForStatusUpdate),
		Validate:               check(podspec.Validate),
		ValidateUpdate:         check2(podspec.ValidateUpdate),
		ValidateStatusUpdate:   check2(validatePodStatusUpdate),
		FieldSet:               fieldSet(true, podFields),
		Table:                  table(podColumns, b.podRow),

		PrepareForEphemeralContainersUpdate: hook2(preparePodForEphemeralContainersUpdate),
		ValidateEphemeralContainersUpdate:   check2(podspec.ValidateEphemeralContainersUpdate),
		PrepareForResizeUpdate:              hook2(preparePodForResize),
		ValidateResizeUpdate:                check2(podspec.ValidateResize),

		GracePeriod: podGracePeriod,
		Bind:        b.bindPod,
	}
}

// preparePodForCreate resets status to what a new pod reports: Pending with
// its QoS class, and the PodScheduled=False condition when scheduling gates
// hold it back; the pod's matchLabelKeys become selector requirements.
func preparePodForCreate(pod *v1.Pod) {
	podspec.MergeLabelKeys(pod)
	pod.Status = v1.PodStatus{Phase: v1.PodPending, QOSClass: podutil.ComputeQOS(pod)}
	pod.Generation = 1
	if len(pod.Spec.SchedulingGates) > 0 {
		pod.Status.Conditions = append(pod.Status.Conditions, v1.PodCondition{
			Type:    v1.PodScheduled,
			Status:  v1.ConditionFalse,
			Reason:  v1.PodReasonSchedulingGated,
			Message: "Scheduling is blocked due to non-empty scheduling gates",
		})
	}
}

func preparePodForUpdate(pod, old *v1.Pod) {
	pod.Status = old.Status
	pod.Generation = old.Generation
	if !equality.Semantic.DeepEqual(pod.Spec, old.Spec) {
		pod.Generation = old.Generation + 1
	}
}

// preparePodForStatusUpdate keeps the spec, deletion timestamp and owner
// references (old kubelets corrupt them), and the QoS class fixed at
// creation.
func preparePodForStatusUpdate(pod, old *v1.Pod) {
	pod.Spec = old.Spec
	pod.DeletionTimestamp = old.DeletionTimestamp
	pod.OwnerReferences = old.OwnerReferences
	pod.Generation = old.Generation
	if pod.Status.QOSClass == "" {
		pod.Status.QOSClass = old.Status.QOSClass
	}
	if pod.Status.ObservedGeneration == 0 {
		pod.Status.ObservedGeneration = old.Status.ObservedGeneration
	}
}

func validatePodStatusUpdate(pod, old *v1.Pod) field.ErrorList {
	errs := validateMetaUpdate(&pod.ObjectMeta, &old.ObjectMeta)
	status := field.NewPath("status")
	if n := pod.Status.NominatedNodeName; n != "" {
		for _, msg := range validation.IsDNS1123Subdomain(n) {
			errs = append(errs, field.Invalid(status.Child("nominatedNodeName"), n, msg))
		}
	}
	for i, ip := range pod.Status.PodIPs {
		errs = append(errs, validation.IsValidIPForLegacyField(status.Child("podIPs").Index(i).Child("ip"), ip.IP, false, nil)...)
	}
	if len(pod.Status.PodIPs) > 2 {
		errs = append(errs, field.TooMany(status.Child("podIPs"), len(pod.Status.PodIPs), 2))
	}
	for i, ip := range pod.Status.HostIPs {
		errs = append(errs, validation.IsValidIPForLegacyField(status.Child("hostIPs").Index(i).Child("ip"), ip.IP, false, nil)...)
	}
	if pod.Status.ObservedGeneration < 0 {
		errs = append(errs, nonNegative(pod.Status.ObservedGeneration, status.Child("observedGeneration"))...)
	}
	return errs
}

func podFields(pod *v1.Pod) fields.Set {
	podIP := ""
	if len(pod.Status.PodIPs) > 0 {
		podIP = pod.Status.PodIPs[0].IP
	}
	return fields.Set{
		"spec.nodeName":            pod.Spec.NodeName,
		"spec.restartPolicy":       string(pod.Spec.RestartPolicy),
		"spec.schedulerName":       pod.Spec.SchedulerName,
		"spec.serviceAccountName":  pod.Spec.ServiceAccountName,
		"spec.hostNetwork":         strconv.FormatBool(pod.Spec.HostNetwork),
		"status.phase":             string(pod.Status.Phase),
		"status.podIP":             podIP,
		"status.nominatedNodeName": pod.Status.NominatedNodeName,
	}
}
