package registry

import (
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Reviews are virtual: create-only, answered from the request, never stored
// or listed (NewList is nil).

func (b *builder) tokenReviews() *Resource {
	return &Resource{
		GVK:      authenticationv1.SchemeGroupVersion.WithKind("TokenReview"),
		Plural:   "tokenreviews",
		Singular: "tokenreview",
		Verbs:    createOnly,
		Virtual:  true,
		New:      func() runtime.Object { return &authenticationv1.TokenReview{} },
		Validate: check(func(r *authenticationv1.TokenReview) field.ErrorList {
			if r.Spec.Token == "" {
				return field.ErrorList{field.Required(field.NewPath("spec", "token"), "token is required for TokenReview in authentication")}
			}
			return nil
		}),
	}
}

func (b *builder) selfSubjectAccessReviews() *Resource {
	return &Resource{
		GVK:      authorizationv1.SchemeGroupVersion.WithKind("SelfSubjectAccessReview"),
		Plural:   "selfsubjectaccessreviews",
		Singular: "selfsubjectaccessreview",
		Verbs:    createOnly,
		Virtual:  true,
		New:      func() runtime.Object { return &authorizationv1.SelfSubjectAccessReview{} },
		Validate: check(validateSelfSubjectAccessReview),
	}
}

func validateSelfSubjectAccessReview(r *authorizationv1.SelfSubjectAccessReview) field.ErrorList {
	errs := validateEmptyMeta(r.ObjectMeta)
	sp := field.NewPath("spec")
	switch {
	case r.Spec.ResourceAttributes != nil && r.Spec.NonResourceAttributes != nil:
		errs = append(errs, field.Invalid(sp.Child("nonResourceAttributes"), r.Spec.NonResourceAttributes, "cannot be specified in combination with resourceAttributes"))
	case r.Spec.ResourceAttributes == nil && r.Spec.NonResourceAttributes == nil:
		errs = append(errs, field.Invalid(sp.Child("resourceAttributes"), r.Spec.NonResourceAttributes, "exactly one of nonResourceAttributes or resourceAttributes must be specified"))
	}
	return errs
}

// validateEmptyMeta is upstream's rule for access reviews: they carry no
// metadata (managed fields aside).
func validateEmptyMeta(m metav1.ObjectMeta) field.ErrorList {
	rest := m
	rest.ManagedFields = nil
	if !equality.Semantic.DeepEqual(metav1.ObjectMeta{}, rest) {
		return field.ErrorList{field.Invalid(field.NewPath("metadata"), m, "must be empty")}
	}
	return nil
}

// selfSubjectRulesReviews list what the requester may do in a namespace
// (kubectl auth can-i --list).
func (b *builder) selfSubjectRulesReviews() *Resource {
	return &Resource{
		GVK:      authorizationv1.SchemeGroupVersion.WithKind("SelfSubjectRulesReview"),
		Plural:   "selfsubjectrulesreviews",
		Singular: "selfsubjectrulesreview",
		Verbs:    createOnly,
		Virtual:  true,
		New:      func() runtime.Object { return &authorizationv1.SelfSubjectRulesReview{} },
		Validate: check(func(r *authorizationv1.SelfSubjectRulesReview) field.ErrorList {
			return validateEmptyMeta(r.ObjectMeta)
		}),
	}
}

// selfSubjectReviews tell the requester who the server takes them for
// (kubectl auth whoami).
func (b *builder) selfSubjectReviews() *Resource {
	return &Resource{
		GVK:      authenticationv1.SchemeGroupVersion.WithKind("SelfSubjectReview"),
		Plural:   "selfsubjectreviews",
		Singular: "selfsubjectreview",
		Verbs:    createOnly,
		Virtual:  true,
		New:      func() runtime.Object { return &authenticationv1.SelfSubjectReview{} },
	}
}
