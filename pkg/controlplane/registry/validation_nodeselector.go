package registry

import (
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Node selectors of a PersistentVolume's node affinity, as upstream's
// validateVolumeNodeAffinity and ValidateNodeSelector.

// validateVolumeNodeAffinity reports whether an affinity is set, and its
// errors.
func validateVolumeNodeAffinity(a *v1.VolumeNodeAffinity, p *field.Path) (bool, field.ErrorList) {
	if a == nil {
		return false, nil
	}
	if a.Required == nil {
		return true, field.ErrorList{field.Required(p.Child("required"), "must specify required node constraints")}
	}
	return true, validateNodeSelector(a.Required, p.Child("required"))
}

func validateNodeSelector(s *v1.NodeSelector, p *field.Path) field.ErrorList {
	terms := p.Child("nodeSelectorTerms")
	if len(s.NodeSelectorTerms) == 0 {
		return field.ErrorList{field.Required(terms, "must have at least one node selector term")}
	}
	var errs field.ErrorList
	for i, term := range s.NodeSelectorTerms {
		tp := terms.Index(i)
		for j, req := range term.MatchExpressions {
			errs = append(errs, validateNodeSelectorRequirement(req, tp.Child("matchExpressions").Index(j))...)
		}
		for j, req := range term.MatchFields {
			errs = append(errs, validateNodeFieldSelectorRequirement(req, tp.Child("matchFields").Index(j))...)
		}
	}
	return errs
}

func validateNodeSelectorRequirement(rq v1.NodeSelectorRequirement, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	values := p.Child("values")
	switch rq.Operator {
	case v1.NodeSelectorOpIn, v1.NodeSelectorOpNotIn:
		if len(rq.Values) == 0 {
			errs = append(errs, field.Required(values, "must be specified when `operator` is 'In' or 'NotIn'"))
		}
	case v1.NodeSelectorOpExists, v1.NodeSelectorOpDoesNotExist:
		if len(rq.Values) > 0 {
			errs = append(errs, field.Forbidden(values, "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"))
		}
	case v1.NodeSelectorOpGt, v1.NodeSelectorOpLt:
		if len(rq.Values) != 1 {
			errs = append(errs, field.Required(values, "must be specified single value when `operator` is 'Lt' or 'Gt'"))
		}
	default:
		errs = append(errs, field.Invalid(p.Child("operator"), rq.Operator, "not a valid selector operator"))
	}
	errs = append(errs, metav1validation.ValidateLabelName(rq.Key, p.Child("key"))...)
	for i, v := range rq.Values {
		errs = append(errs, invalidAll(values.Index(i), v, validation.IsValidLabelValue(v))...)
	}
	return errs
}

// validateNodeFieldSelectorRequirement: only metadata.name, with In or
// NotIn and one node name.
func validateNodeFieldSelectorRequirement(rq v1.NodeSelectorRequirement, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch rq.Operator {
	case v1.NodeSelectorOpIn, v1.NodeSelectorOpNotIn:
		if len(rq.Values) != 1 {
			errs = append(errs, field.Required(p.Child("values"), "must be only one value when `operator` is 'In' or 'NotIn' for node field selector"))
		}
	default:
		errs = append(errs, field.Invalid(p.Child("operator"), rq.Operator, "not a valid selector operator"))
	}
	if rq.Key != metav1.ObjectNameField {
		return append(errs, field.Invalid(p.Child("key"), rq.Key, "not a valid field selector key"))
	}
	for i, v := range rq.Values {
		errs = append(errs, invalidAll(p.Child("values").Index(i), v, validation.IsDNS1123Subdomain(v))...)
	}
	return errs
}
