package registry

import (
	"slices"

	coordinationv1 "k8s.io/api/coordination/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func (b *builder) leases() *Resource {
	r := &Resource{
		GVK:        coordinationv1.SchemeGroupVersion.WithKind("Lease"),
		Plural:     "leases",
		Singular:   "lease",
		Namespaced: true,
		Verbs:      allVerbs,
		New:        func() runtime.Object { return &coordinationv1.Lease{} },
		NewList:    func() runtime.Object { return &coordinationv1.LeaseList{} },
		FieldSet:   fieldSet[*coordinationv1.Lease](true, nil),
		Table:      table(leaseColumns, b.leaseRow),
	}
	r.Validate, r.ValidateUpdate = simpleValidation(validateLease)
	return r
}

var leaseStrategies = []coordinationv1.CoordinatedLeaseStrategy{coordinationv1.OldestEmulationVersion}

func validateLease(l *coordinationv1.Lease) field.ErrorList {
	errs := validateMeta(&l.ObjectMeta, true, apimachineryvalidation.NameIsDNSSubdomain)
	spec, sp := &l.Spec, field.NewPath("spec")
	if d := spec.LeaseDurationSeconds; d != nil && *d <= 0 {
		errs = append(errs, field.Invalid(sp.Child("leaseDurationSeconds"), *d, "must be greater than 0"))
	}
	if t := spec.LeaseTransitions; t != nil {
		errs = append(errs, nonNegative(int64(*t), sp.Child("leaseTransitions"))...)
	}
	if s := spec.Strategy; s != nil && !slices.Contains(leaseStrategies, *s) {
		errs = append(errs, field.NotSupported(sp.Child("strategy"), *s, leaseStrategies))
	}
	if spec.PreferredHolder != nil && *spec.PreferredHolder != "" && (spec.Strategy == nil || *spec.Strategy == "") {
		errs = append(errs, field.Forbidden(sp.Child("preferredHolder"), "may only be specified if `strategy` is defined"))
	}
	return errs
}
