package registry

import (
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// subjectAccessReviews ask whether a given user may do something; node
// agents create them to authorize requests to their kubelet API.
func (b *builder) subjectAccessReviews() *Resource {
	return &Resource{
		GVK:      authorizationv1.SchemeGroupVersion.WithKind("SubjectAccessReview"),
		Plural:   "subjectaccessreviews",
		Singular: "subjectaccessreview",
		Verbs:    createOnly,
		Virtual:  true,
		New:      func() runtime.Object { return &authorizationv1.SubjectAccessReview{} },
		Validate: check(validateSubjectAccessReview),
	}
}

// validateSubjectAccessReview is upstream's ValidateSubjectAccessReview.
func validateSubjectAccessReview(r *authorizationv1.SubjectAccessReview) field.ErrorList {
	errs := validateEmptyMeta(r.ObjectMeta)
	sp := field.NewPath("spec")
	if (r.Spec.ResourceAttributes == nil) == (r.Spec.NonResourceAttributes == nil) {
		errs = append(errs, field.Invalid(sp, r.Spec.NonResourceAttributes, "exactly one of nonResourceAttributes or resourceAttributes must be specified"))
	}
	if r.Spec.User == "" && len(r.Spec.Groups) == 0 {
		errs = append(errs, field.Invalid(sp.Child("user"), r.Spec.User, "at least one of user or group must be specified"))
	}
	return errs
}
