package podspec

import (
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Node selectors, as upstream's ValidateNodeSelector: a pod's required
// node affinity and a PersistentVolume's node affinity.

// ValidateNodeSelector checks a required node selector: at least one
// term, each requirement well formed.
func ValidateNodeSelector(s *v1.NodeSelector, p *field.Path) field.ErrorList {
	terms := p.Child("nodeSelectorTerms")
	if len(s.NodeSelectorTerms) == 0 {
		return field.ErrorList{field.Required(terms, "must have at least one node selector term")}
	}
	var errs field.ErrorList
	for i, term := range s.NodeSelectorTerms {
		errs = append(errs, validateNodeSelectorTerm(term, terms.Index(i))...)
	}
	return errs
}

func validateNodeSelectorTerm(term v1.NodeSelectorTerm, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for j, req := range term.MatchExpressions {
		errs = append(errs, validateNodeSelectorRequirement(req, p.Child("matchExpressions").Index(j))...)
	}
	for j, req := range term.MatchFields {
		errs = append(errs, validateNodeFieldSelectorRequirement(req, p.Child("matchFields").Index(j))...)
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
		errs = append(errs, InvalidAll(values.Index(i), v, validation.IsValidLabelValue(v))...)
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
		errs = append(errs, InvalidAll(p.Child("values").Index(i), v, validation.IsDNS1123Subdomain(v))...)
	}
	return errs
}

// InvalidAll turns each message of a check into an Invalid error at p.
func InvalidAll(p *field.Path, value interface{}, msgs []string) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range msgs {
		errs = append(errs, field.Invalid(p, value, msg))
	}
	return errs
}
