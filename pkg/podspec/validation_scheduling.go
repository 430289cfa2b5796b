package podspec

import (
	"fmt"
	"slices"

	v1 "k8s.io/api/core/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The scheduling fields of a pod: affinity and topology spread
// constraints, as upstream's validateAffinity and
// validateTopologySpreadConstraints, with MatchLabelKeysInPodAffinity and
// MatchLabelKeysInPodTopologySpreadSelectorMerge at their default (on):
// the selectors a pod is validated with already hold the requirements its
// matchLabelKeys and mismatchLabelKeys add (MergeLabelKeys, at create).

const (
	notPositive   = "must be greater than zero"
	weightRange   = "must be in the range 1-100"
	notWithoutSel = "must not be specified when labelSelector is not set"
)

var (
	scheduleActions   = []v1.UnsatisfiableConstraintAction{v1.DoNotSchedule, v1.ScheduleAnyway}
	inclusionPolicies = []v1.NodeInclusionPolicy{v1.NodeInclusionPolicyHonor, v1.NodeInclusionPolicyIgnore}
	strictSelector    = metav1validation.LabelSelectorValidationOptions{}
)

func validateAffinity(a *v1.Affinity, p *field.Path) field.ErrorList {
	if a == nil {
		return nil
	}
	var errs field.ErrorList
	if na := a.NodeAffinity; na != nil {
		np := p.Child("nodeAffinity")
		if na.RequiredDuringSchedulingIgnoredDuringExecution != nil {
			errs = append(errs, ValidateNodeSelector(na.RequiredDuringSchedulingIgnoredDuringExecution, np.Child("requiredDuringSchedulingIgnoredDuringExecution"))...)
		}
		pp := np.Child("preferredDuringSchedulingIgnoredDuringExecution")
		for i, t := range na.PreferredDuringSchedulingIgnoredDuringExecution {
			errs = append(errs, validateWeight(t.Weight, pp.Index(i).Child("weight"))...)
			errs = append(errs, validateNodeSelectorTerm(t.Preference, pp.Index(i).Child("preference"))...)
		}
	}
	if pa := a.PodAffinity; pa != nil {
		errs = append(errs, validatePodAffinityTerms(pa.RequiredDuringSchedulingIgnoredDuringExecution, pa.PreferredDuringSchedulingIgnoredDuringExecution, p.Child("podAffinity"))...)
	}
	if pa := a.PodAntiAffinity; pa != nil {
		errs = append(errs, validatePodAffinityTerms(pa.RequiredDuringSchedulingIgnoredDuringExecution, pa.PreferredDuringSchedulingIgnoredDuringExecution, p.Child("podAntiAffinity"))...)
	}
	return errs
}

func validatePodAffinityTerms(required []v1.PodAffinityTerm, preferred []v1.WeightedPodAffinityTerm, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, t := range required {
		errs = append(errs, validatePodAffinityTerm(t, p.Child("requiredDuringSchedulingIgnoredDuringExecution").Index(i))...)
	}
	for i, t := range preferred {
		tp := p.Child("preferredDuringSchedulingIgnoredDuringExecution").Index(i)
		errs = append(errs, validateWeight(t.Weight, tp.Child("weight"))...)
		errs = append(errs, validatePodAffinityTerm(t.PodAffinityTerm, tp.Child("podAffinityTerm"))...)
	}
	return errs
}

func validateWeight(w int32, p *field.Path) field.ErrorList {
	if w <= 0 || w > 100 {
		return field.ErrorList{field.Invalid(p, w, weightRange)}
	}
	return nil
}

func validatePodAffinityTerm(t v1.PodAffinityTerm, p *field.Path) field.ErrorList {
	errs := metav1validation.ValidateLabelSelector(t.LabelSelector, strictSelector, p.Child("labelSelector"))
	errs = append(errs, metav1validation.ValidateLabelSelector(t.NamespaceSelector, strictSelector, p.Child("namespaceSelector"))...)
	for _, ns := range t.Namespaces {
		// Upstream names the path "namespace", singular.
		errs = append(errs, InvalidAll(p.Child("namespace"), ns, apimachineryvalidation.ValidateNamespaceName(ns, false))...)
	}
	errs = append(errs, validateLabelKeys(p, t.MatchLabelKeys, t.MismatchLabelKeys, t.LabelSelector)...)
	if t.TopologyKey == "" {
		errs = append(errs, field.Required(p.Child("topologyKey"), "can not be empty"))
	}
	return append(errs, metav1validation.ValidateLabelName(t.TopologyKey, p.Child("topologyKey"))...)
}

// validateLabelKeys is upstream's validateMatchLabelKeysAndMismatchLabelKeys.
// A key of matchLabelKeys that the user also put in the selector shows as
// the merged requirement meeting an earlier one; the error's path is the
// term's, indexed by the key's position, as upstream reports it.
func validateLabelKeys(p *field.Path, match, mismatch []string, sel *metav1.LabelSelector) field.ErrorList {
	errs := validateLabelKeyNames(p.Child("matchLabelKeys"), match, sel)
	errs = append(errs, validateLabelKeyNames(p.Child("mismatchLabelKeys"), mismatch, sel)...)
	if sel != nil {
		index := map[string]int{}
		for i, k := range match {
			index[k] = i
		}
		seen := sets.KeySet(sel.MatchLabels)
		for _, r := range sel.MatchExpressions {
			if i, ok := index[r.Key]; ok && seen.Has(r.Key) {
				errs = append(errs, field.Invalid(p.Index(i), r.Key, "exists in both matchLabelKeys and labelSelector"))
			}
			seen.Insert(r.Key)
		}
	}
	mismatched := sets.New(mismatch...)
	for i, k := range match {
		if mismatched.Has(k) {
			errs = append(errs, field.Invalid(p.Child("matchLabelKeys").Index(i), k, "exists in both matchLabelKeys and mismatchLabelKeys"))
		}
	}
	return errs
}

func validateLabelKeyNames(p *field.Path, keys []string, sel *metav1.LabelSelector) field.ErrorList {
	if len(keys) == 0 {
		return nil
	}
	if sel == nil {
		return field.ErrorList{field.Forbidden(p, notWithoutSel)}
	}
	var errs field.ErrorList
	for i, k := range keys {
		errs = append(errs, metav1validation.ValidateLabelName(k, p.Index(i))...)
	}
	return errs
}

func validateTopologySpreadConstraints(cs []v1.TopologySpreadConstraint, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, c := range cs {
		cp := p.Index(i)
		if c.MaxSkew <= 0 {
			errs = append(errs, field.Invalid(cp.Child("maxSkew"), c.MaxSkew, notPositive))
		}
		if c.TopologyKey == "" {
			errs = append(errs, field.Required(cp.Child("topologyKey"), "can not be empty"))
		}
		errs = append(errs, oneOf(c.WhenUnsatisfiable, scheduleActions, cp.Child("whenUnsatisfiable"))...)
		for _, later := range cs[i+1:] {
			if later.TopologyKey == c.TopologyKey && later.WhenUnsatisfiable == c.WhenUnsatisfiable {
				errs = append(errs, field.Duplicate(cp.Child("{topologyKey, whenUnsatisfiable}"), fmt.Sprintf("{%v, %v}", c.TopologyKey, c.WhenUnsatisfiable)))
				break
			}
		}
		if md := c.MinDomains; md != nil {
			if *md <= 0 {
				errs = append(errs, field.Invalid(cp.Child("minDomains"), *md, notPositive))
			}
			if c.WhenUnsatisfiable != v1.DoNotSchedule {
				errs = append(errs, field.Invalid(cp.Child("minDomains"), *md,
					fmt.Sprintf("can only use minDomains if whenUnsatisfiable=%s, not %s", v1.DoNotSchedule, c.WhenUnsatisfiable)))
			}
		}
		for _, pol := range []struct {
			name string
			v    *v1.NodeInclusionPolicy
		}{{"nodeAffinityPolicy", c.NodeAffinityPolicy}, {"nodeTaintsPolicy", c.NodeTaintsPolicy}} {
			if pol.v != nil {
				errs = append(errs, oneOf(*pol.v, inclusionPolicies, cp.Child(pol.name))...)
			}
		}
		errs = append(errs, validateLabelKeys(cp, c.MatchLabelKeys, nil, c.LabelSelector)...)
		errs = append(errs, metav1validation.ValidateLabelSelector(c.LabelSelector, strictSelector, cp.Child("labelSelector"))...)
	}
	return errs
}

// MergeLabelKeys adds to a new pod's pod (anti-)affinity terms and topology
// spread constraints the requirements their matchLabelKeys (key In the
// pod's value) and mismatchLabelKeys (key NotIn) stand for, as upstream's
// API server does when a pod is created; keys the pod has no label for are
// skipped, and a term without a labelSelector is left alone (validation
// refuses it).
func MergeLabelKeys(pod *v1.Pod) {
	merge := func(sel *metav1.LabelSelector, keys []string, op metav1.LabelSelectorOperator) {
		for _, k := range keys {
			if v, ok := pod.Labels[k]; ok {
				sel.MatchExpressions = append(sel.MatchExpressions, metav1.LabelSelectorRequirement{Key: k, Operator: op, Values: []string{v}})
			}
		}
	}
	term := func(t *v1.PodAffinityTerm) {
		if t.LabelSelector != nil {
			merge(t.LabelSelector, t.MatchLabelKeys, metav1.LabelSelectorOpIn)
			merge(t.LabelSelector, t.MismatchLabelKeys, metav1.LabelSelectorOpNotIn)
		}
	}
	terms := func(required []v1.PodAffinityTerm, preferred []v1.WeightedPodAffinityTerm) {
		for i := range required {
			term(&required[i])
		}
		for i := range preferred {
			term(&preferred[i].PodAffinityTerm)
		}
	}
	if a := pod.Spec.Affinity; a != nil {
		if a.PodAffinity != nil {
			terms(a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution, a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution)
		}
		if a.PodAntiAffinity != nil {
			terms(a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution, a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution)
		}
	}
	for i := range pod.Spec.TopologySpreadConstraints {
		c := &pod.Spec.TopologySpreadConstraints[i]
		if c.LabelSelector != nil {
			merge(c.LabelSelector, c.MatchLabelKeys, metav1.LabelSelectorOpIn)
		}
	}
}

// oneOf, unlike validateEnum, reports an empty value as not supported,
// as upstream's topology spread checks do.
func oneOf[T ~string](value T, valid []T, p *field.Path) field.ErrorList {
	if !slices.Contains(valid, value) {
		return field.ErrorList{field.NotSupported(p, value, valid)}
	}
	return nil
}
