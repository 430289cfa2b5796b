package podspec

import (
	"fmt"
	"math"
	"reflect"
	"regexp"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/diff"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Linux libc resolver limits on spec.dnsConfig.
const (
	maxDNSNameservers     = 3
	maxDNSSearchPaths     = 32
	maxDNSSearchListChars = 2048
)

var (
	supportedRestartPolicies = []v1.RestartPolicy{v1.RestartPolicyAlways, v1.RestartPolicyOnFailure, v1.RestartPolicyNever}
	supportedDNSPolicies     = []v1.DNSPolicy{v1.DNSClusterFirstWithHostNet, v1.DNSClusterFirst, v1.DNSDefault, v1.DNSNone}
	supportedPreemption      = []v1.PreemptionPolicy{v1.PreemptLowerPriority, v1.PreemptNever}
	supportedOSes            = sets.New(v1.Linux, v1.Windows)

	// The fields ValidateUpdate lets change, as upstream words them.
	updatablePodSpecFields = []string{
		"`spec.containers[*].image`",
		"`spec.initContainers[*].image`",
		"`spec.activeDeadlineSeconds`",
		"`spec.tolerations` (only additions to existing tolerations)",
		"`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)",
	}
)

// Validate checks a pod about to be created (after SetDefaults) and returns
// every problem found, with upstream's field paths and error types.
func Validate(pod *v1.Pod) field.ErrorList {
	allErrs := validatePod(pod)
	specPath := field.NewPath("spec")
	// Ephemeral containers are only added later, through their subresource.
	if len(pod.Spec.EphemeralContainers) > 0 {
		allErrs = append(allErrs, field.Forbidden(specPath.Child("ephemeralContainers"), "cannot be set on create"))
	}
	if pod.Spec.NodeName != "" && len(pod.Spec.SchedulingGates) != 0 {
		allErrs = append(allErrs, field.Forbidden(specPath.Child("nodeName"), "cannot be set until all schedulingGates have been cleared"))
	}
	return allErrs
}

// ValidateUpdate checks an update of oldPod into newPod: newPod must be valid,
// its metadata update legal, and its spec unchanged except for the few
// mutable fields (container images, activeDeadlineSeconds, added
// tolerations, removed scheduling gates).
func ValidateUpdate(newPod, oldPod *v1.Pod) field.ErrorList {
	metaPath, specPath := field.NewPath("metadata"), field.NewPath("spec")
	allErrs := apimachineryvalidation.ValidateObjectMetaUpdate(&newPod.ObjectMeta, &oldPod.ObjectMeta, metaPath)
	allErrs = append(allErrs, validatePod(newPod)...)
	allErrs = append(allErrs, validateMirrorAnnotationUpdate(newPod.Annotations, oldPod.Annotations, metaPath.Child("annotations"))...)

	newSpec, oldSpec := &newPod.Spec, &oldPod.Spec
	for _, list := range []struct {
		name     string
		new, old []v1.Container
	}{{"containers", newSpec.Containers, oldSpec.Containers}, {"initContainers", newSpec.InitContainers, oldSpec.InitContainers}} {
		p := specPath.Child(list.name)
		if len(list.new) != len(list.old) {
			return append(allErrs, field.Forbidden(p, "pod updates may not add or remove containers"))
		}
		for i, c := range list.new {
			if c.Image == "" {
				allErrs = append(allErrs, field.Required(p.Index(i).Child("image"), ""))
			}
			allErrs = append(allErrs, validateImageWhitespace(c.Image, p.Index(i).Child("image"))...)
		}
	}

	// activeDeadlineSeconds may be set, or lowered, but not raised or cleared.
	adsPath := specPath.Child("activeDeadlineSeconds")
	if ads := newSpec.ActiveDeadlineSeconds; ads != nil {
		if *ads < 0 || *ads > math.MaxInt32 {
			return append(allErrs, field.Invalid(adsPath, *ads, validation.InclusiveRangeError(0, math.MaxInt32)))
		}
		if old := oldSpec.ActiveDeadlineSeconds; old != nil && *old < *ads {
			return append(allErrs, field.Invalid(adsPath, *ads, "must be less than or equal to previous value"))
		}
	} else if oldSpec.ActiveDeadlineSeconds != nil {
		allErrs = append(allErrs, field.Invalid(adsPath, newSpec.ActiveDeadlineSeconds, "must not update from a positive integer to nil value"))
	}
	allErrs = append(allErrs, validateOnlyAddedTolerations(newSpec.Tolerations, oldSpec.Tolerations, specPath.Child("tolerations"))...)
	allErrs = append(allErrs, validateOnlyDeletedSchedulingGates(newSpec.SchedulingGates, oldSpec.SchedulingGates, specPath.Child("schedulingGates"))...)

	if equality.Semantic.DeepEqual(newSpec, oldSpec) {
		return allErrs
	}
	// Put back the old value of every field allowed to change; any remaining
	// difference is forbidden.
	munged := newSpec.DeepCopy()
	for i := range munged.Containers {
		munged.Containers[i].Image = oldSpec.Containers[i].Image
	}
	for i := range munged.InitContainers {
		munged.InitContainers[i].Image = oldSpec.InitContainers[i].Image
	}
	munged.ActiveDeadlineSeconds = oldSpec.ActiveDeadlineSeconds
	munged.Tolerations = oldSpec.Tolerations
	munged.SchedulingGates = oldSpec.SchedulingGates
	if old, cur := oldSpec.TerminationGracePeriodSeconds, munged.TerminationGracePeriodSeconds; old != nil && *old < 0 && cur != nil && *cur == 1 {
		munged.TerminationGracePeriodSeconds = old
	}
	if !equality.Semantic.DeepEqual(munged, oldSpec) {
		allErrs = append(allErrs, field.Forbidden(specPath, fmt.Sprintf("pod updates may not change fields other than %s\n%v",
			strings.Join(updatablePodSpecFields, ","), diff.Diff(oldSpec, munged))))
	}
	return allErrs
}

var newlines = regexp.MustCompile(`\s*\n\s*`)

// FormatErrors renders errs on one line, for logs: "" when there are none,
// the single error, or "[first, second, ...]".
func FormatErrors(errs field.ErrorList) string {
	agg := errs.ToAggregate()
	if agg == nil {
		return ""
	}
	return newlines.ReplaceAllString(agg.Error(), " ")
}

// validatePod holds what pod create and update validation share.
func validatePod(pod *v1.Pod) field.ErrorList {
	metaPath, specPath := field.NewPath("metadata"), field.NewPath("spec")
	allErrs := apimachineryvalidation.ValidateObjectMeta(&pod.ObjectMeta, true, apimachineryvalidation.NameIsDNSSubdomain, metaPath)
	if v, ok := pod.Annotations[v1.MirrorPodAnnotationKey]; ok && pod.Spec.NodeName == "" {
		allErrs = append(allErrs, field.Invalid(metaPath.Child("annotations").Key(v1.MirrorPodAnnotationKey), v,
			"must set spec.nodeName if mirror pod annotation is set"))
	}
	allErrs = append(allErrs, validatePodSpec(&pod.Spec, specPath)...)

	// Service account tokens need a service account.
	if pod.Spec.ServiceAccountName == "" {
		for vi, vol := range pod.Spec.Volumes {
			if vol.Projected == nil {
				continue
			}
			for si, src := range vol.Projected.Sources {
				if src.ServiceAccountToken != nil {
					allErrs = append(allErrs, field.Forbidden(specPath.Child("volumes").Index(vi).Child("projected", "sources").Index(si).Child("serviceAccountToken"),
						"must not be specified when serviceAccountName is not set"))
				}
			}
		}
	}
	for _, list := range []struct {
		name       string
		containers []v1.Container
	}{{"containers", pod.Spec.Containers}, {"initContainers", pod.Spec.InitContainers}} {
		for i, c := range list.containers {
			allErrs = append(allErrs, validateImageWhitespace(c.Image, specPath.Child(list.name).Index(i).Child("image"))...)
		}
	}
	return allErrs
}

func validatePodSpec(spec *v1.PodSpec, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if spec.TerminationGracePeriodSeconds == nil {
		allErrs = append(allErrs, field.Required(fldPath.Child("terminationGracePeriodSeconds"), ""))
	} else {
		allErrs = append(allErrs, apimachineryvalidation.ValidateNonnegativeField(*spec.TerminationGracePeriodSeconds, fldPath.Child("terminationGracePeriodSeconds"))...)
	}
	vols, errs := validateVolumes(spec.Volumes, fldPath.Child("volumes"))
	allErrs = append(allErrs, errs...)
	ctx := podContext{vols: vols, gracePeriod: spec.TerminationGracePeriodSeconds, hostUsers: spec.HostUsers == nil || *spec.HostUsers, restartPolicy: spec.RestartPolicy}
	allErrs = append(allErrs, validateContainers(spec.Containers, ctx, fldPath.Child("containers"))...)
	allErrs = append(allErrs, validateInitContainers(spec.InitContainers, spec.Containers, ctx, fldPath.Child("initContainers"))...)
	allErrs = append(allErrs, validateEphemeralContainers(spec, ctx, fldPath.Child("ephemeralContainers"))...)

	// With host networking a pod's ports are the host's ports.
	if spec.HostNetwork {
		for i, c := range spec.Containers {
			for j, port := range c.Ports {
				if port.HostPort != port.ContainerPort {
					allErrs = append(allErrs, field.Invalid(fldPath.Child("containers").Index(i).Child("ports").Index(j).Child("hostPort"),
						port.HostPort, "must match `containerPort` when `hostNetwork` is true"))
				}
			}
		}
	}
	allErrs = append(allErrs, validateEnum(spec.RestartPolicy, supportedRestartPolicies, fldPath.Child("restartPolicy"))...)
	allErrs = append(allErrs, validateEnum(spec.DNSPolicy, supportedDNSPolicies, fldPath.Child("dnsPolicy"))...)
	allErrs = append(allErrs, metav1validation.ValidateLabels(spec.NodeSelector, fldPath.Child("nodeSelector"))...)
	allErrs = append(allErrs, validatePodSecurity(spec, fldPath)...)
	allErrs = append(allErrs, validateDNSConfig(spec.DNSConfig, spec.DNSPolicy, fldPath.Child("dnsConfig"))...)
	for i, g := range spec.ReadinessGates {
		allErrs = append(allErrs, qualifiedName(string(g.ConditionType), fldPath.Child("readinessGates").Index(i).Child("conditionType"))...)
	}
	gates := sets.New[string]()
	for i, g := range spec.SchedulingGates {
		p := fldPath.Child("schedulingGates").Index(i)
		allErrs = append(allErrs, qualifiedName(g.Name, p)...)
		if gates.Has(g.Name) {
			allErrs = append(allErrs, field.Duplicate(p, g.Name))
		}
		gates.Insert(g.Name)
	}
	for _, f := range []struct{ name, value string }{
		{"serviceAccountName", spec.ServiceAccountName}, {"nodeName", spec.NodeName}, {"priorityClassName", spec.PriorityClassName},
	} {
		if f.value == "" {
			continue
		}
		for _, msg := range apimachineryvalidation.NameIsDNSSubdomain(f.value, false) {
			allErrs = append(allErrs, field.Invalid(fldPath.Child(f.name), f.value, msg))
		}
	}
	if ads := spec.ActiveDeadlineSeconds; ads != nil && (*ads < 1 || *ads > math.MaxInt32) {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("activeDeadlineSeconds"), *ads, validation.InclusiveRangeError(1, math.MaxInt32)))
	}
	allErrs = append(allErrs, validateHostname(spec, fldPath)...)
	allErrs = append(allErrs, validateTolerations(spec.Tolerations, fldPath.Child("tolerations"))...)
	allErrs = append(allErrs, validateAffinity(spec.Affinity, fldPath.Child("affinity"))...)
	allErrs = append(allErrs, validateTopologySpreadConstraints(spec.TopologySpreadConstraints, fldPath.Child("topologySpreadConstraints"))...)
	for i, alias := range spec.HostAliases {
		p := fldPath.Child("hostAliases").Index(i)
		allErrs = append(allErrs, validation.IsValidIP(p.Child("ip"), alias.IP)...)
		for j, hostname := range alias.Hostnames {
			allErrs = append(allErrs, dnsSubdomain(hostname, p.Child("hostnames").Index(j))...)
		}
	}
	if spec.Overhead != nil {
		allErrs = append(allErrs, ValidateOverhead(spec.Overhead, fldPath.Child("overhead"))...)
	}
	allErrs = append(allErrs, validatePodLevelResources(spec, fldPath.Child("resources"))...)
	if rc := spec.RuntimeClassName; rc != nil {
		for _, msg := range apimachineryvalidation.NameIsDNSSubdomain(*rc, false) {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("runtimeClassName"), *rc, msg))
		}
	}
	if pp := spec.PreemptionPolicy; pp != nil {
		allErrs = append(allErrs, validateEnum(*pp, supportedPreemption, fldPath.Child("preemptionPolicy"))...)
	}
	if spec.OS != nil {
		if spec.OS.Name == "" {
			allErrs = append(allErrs, field.Required(fldPath.Child("os", "name"), "cannot be empty"))
		} else if !supportedOSes.Has(spec.OS.Name) {
			allErrs = append(allErrs, field.NotSupported(fldPath.Child("os"), spec.OS.Name, sets.List(supportedOSes)))
		}
	}
	return allErrs
}

// validateEnum: Required when empty, NotSupported when not one of valid.
func validateEnum[T ~string](value T, valid []T, p *field.Path) field.ErrorList {
	switch {
	case value == "":
		return field.ErrorList{field.Required(p, "")}
	case !sets.New(valid...).Has(value):
		return field.ErrorList{field.NotSupported(p, value, valid)}
	}
	return nil
}

func validateDNSConfig(cfg *v1.PodDNSConfig, policy v1.DNSPolicy, p *field.Path) field.ErrorList {
	if policy == v1.DNSNone {
		if cfg == nil {
			return field.ErrorList{field.Required(p, fmt.Sprintf("must provide `dnsConfig` when `dnsPolicy` is %s", v1.DNSNone))}
		}
		if len(cfg.Nameservers) == 0 {
			return field.ErrorList{field.Required(p.Child("nameservers"), fmt.Sprintf("must provide at least one DNS nameserver when `dnsPolicy` is %s", v1.DNSNone))}
		}
	}
	if cfg == nil {
		return nil
	}
	var allErrs field.ErrorList
	if len(cfg.Nameservers) > maxDNSNameservers {
		allErrs = append(allErrs, field.Invalid(p.Child("nameservers"), cfg.Nameservers, fmt.Sprintf("must not have more than %v nameservers", maxDNSNameservers)))
	}
	for i, ns := range cfg.Nameservers {
		allErrs = append(allErrs, validation.IsValidIP(p.Child("nameservers").Index(i), ns)...)
	}
	if len(cfg.Searches) > maxDNSSearchPaths {
		allErrs = append(allErrs, field.Invalid(p.Child("searches"), cfg.Searches, fmt.Sprintf("must not have more than %v search paths", maxDNSSearchPaths)))
	}
	if len(strings.Join(cfg.Searches, " ")) > maxDNSSearchListChars {
		allErrs = append(allErrs, field.Invalid(p.Child("searches"), cfg.Searches, fmt.Sprintf("must not have more than %v characters (including spaces) in the search list", maxDNSSearchListChars)))
	}
	for i, search := range cfg.Searches {
		// Relaxed rule (GA): "." and underscores are allowed.
		if search != "." {
			for _, msg := range validation.IsDNS1123SubdomainWithUnderscore(strings.TrimSuffix(search, ".")) {
				allErrs = append(allErrs, field.Invalid(p.Child("searches").Index(i), strings.TrimSuffix(search, "."), msg))
			}
		}
	}
	for i, opt := range cfg.Options {
		if opt.Name == "" {
			allErrs = append(allErrs, field.Required(p.Child("options").Index(i), "must not be empty"))
		}
	}
	return allErrs
}

var supportedTaintEffects = []v1.TaintEffect{v1.TaintEffectNoSchedule, v1.TaintEffectPreferNoSchedule, v1.TaintEffectNoExecute}

func validateTolerations(tolerations []v1.Toleration, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for i, t := range tolerations {
		p := fldPath.Index(i)
		if t.Key != "" {
			allErrs = append(allErrs, metav1validation.ValidateLabelName(t.Key, p.Child("key"))...)
		}
		// An empty key with Exists matches every taint.
		if t.Key == "" && t.Operator != v1.TolerationOpExists {
			allErrs = append(allErrs, field.Invalid(p.Child("operator"), t.Operator,
				"operator must be Exists when `key` is empty, which means \"match all values and all keys\""))
		}
		if t.TolerationSeconds != nil && t.Effect != v1.TaintEffectNoExecute {
			allErrs = append(allErrs, field.Invalid(p.Child("effect"), t.Effect, "effect must be 'NoExecute' when `tolerationSeconds` is set"))
		}
		switch t.Operator {
		case v1.TolerationOpEqual, "": // empty means Equal
			if errs := validation.IsValidLabelValue(t.Value); len(errs) != 0 {
				allErrs = append(allErrs, field.Invalid(p.Child("operator"), t.Value, strings.Join(errs, ";")))
			}
		case v1.TolerationOpExists:
			if t.Value != "" {
				allErrs = append(allErrs, field.Invalid(p.Child("operator"), t.Value, "value must be empty when `operator` is 'Exists'"))
			}
		default:
			allErrs = append(allErrs, field.NotSupported(p.Child("operator"), t.Operator, []v1.TolerationOperator{v1.TolerationOpEqual, v1.TolerationOpExists}))
		}
		// An empty effect matches every effect.
		if t.Effect != "" && !sets.New(supportedTaintEffects...).Has(t.Effect) {
			allErrs = append(allErrs, field.NotSupported(p.Child("effect"), t.Effect, supportedTaintEffects))
		}
	}
	return allErrs
}

// validateOnlyAddedTolerations allows new tolerations, and changing the
// tolerationSeconds of existing ones, but nothing else.
func validateOnlyAddedTolerations(newTols, oldTols []v1.Toleration, p *field.Path) field.ErrorList {
	for _, old := range oldTols {
		found := false
		for _, cur := range newTols {
			old.TolerationSeconds = cur.TolerationSeconds
			if reflect.DeepEqual(old, cur) {
				found = true
				break
			}
		}
		if !found {
			return field.ErrorList{field.Forbidden(p, "existing toleration can not be modified except its tolerationSeconds")}
		}
	}
	return validateTolerations(newTols, p)
}

func validateOnlyDeletedSchedulingGates(newGates, oldGates []v1.PodSchedulingGate, p *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	old := sets.New[string]()
	for _, g := range oldGates {
		old.Insert(g.Name)
	}
	for i, g := range newGates {
		if !old.Has(g.Name) {
			allErrs = append(allErrs, field.Forbidden(p.Index(i).Child("name"), fmt.Sprintf("only deletion is allowed, but found new scheduling gate '%s'", g.Name)))
		}
	}
	return allErrs
}

// The mirror pod annotation marks a pod as the API copy of a static pod:
// only the node agent sets it, when it creates the pod.
func validateMirrorAnnotationUpdate(newAnn, oldAnn map[string]string, p *field.Path) field.ErrorList {
	key := v1.MirrorPodAnnotationKey
	oldVal, hadIt := oldAnn[key]
	newVal, hasIt := newAnn[key]
	switch {
	case hadIt && (!hasIt || newVal != oldVal):
		return field.ErrorList{field.Forbidden(p.Key(key), "may not remove or update mirror pod annotation")}
	case hasIt && !hadIt:
		return field.ErrorList{field.Forbidden(p.Key(key), "may not add mirror pod annotation")}
	}
	return nil
}

func dnsLabel(value string, p *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for _, msg := range validation.IsDNS1123Label(value) {
		allErrs = append(allErrs, field.Invalid(p, value, msg))
	}
	return allErrs
}

func dnsSubdomain(value string, p *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for _, msg := range validation.IsDNS1123Subdomain(value) {
		allErrs = append(allErrs, field.Invalid(p, value, msg))
	}
	return allErrs
}

func qualifiedName(value string, p *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for _, msg := range validation.IsQualifiedName(value) {
		allErrs = append(allErrs, field.Invalid(p, value, msg))
	}
	return allErrs
}

// ValidateTolerations is the pod's tolerations check, for other objects
// that carry tolerations (a RuntimeClass's scheduling).
func ValidateTolerations(tolerations []v1.Toleration, fldPath *field.Path) field.ErrorList {
	return validateTolerations(tolerations, fldPath)
}

// ValidateOverhead checks a pod's (or a RuntimeClass's) fixed overhead
// as upstream does: as the limits of a container's resources.
func ValidateOverhead(overhead v1.ResourceList, fldPath *field.Path) field.ErrorList {
	return validateResources(&v1.ResourceRequirements{Limits: overhead}, fldPath)
}
