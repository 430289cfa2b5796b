package authz

import (
	"context"
	"iter"

	authzv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/nodeagent/nodeagent/pkg/controlplane/apiserver/request"
	"github.com/nodeagent/nodeagent/pkg/controlplane/registry"
)

// Review answers "may u do this?" (a SelfSubjectAccessReview's or
// SubjectAccessReview's attributes) with the authorizer that guards the
// requests themselves, as if u had sent the request, with upstream's
// status: allowed, denied, the authorizer's reason and evaluation error.
// Resource attributes name a served resource (any version for "" or
// "*"); one not served is matched by its group and name alone, as RBAC
// rules match it upstream. fieldSelector is the request's (a node's
// list and watch of pods).
func Review(ctx context.Context, z Authorizer, served iter.Seq[*registry.Resource], u request.User, attrs *authzv1.ResourceAttributes, nonResource *authzv1.NonResourceAttributes, fieldSelector string) authzv1.SubjectAccessReviewStatus {
	var a Attributes
	switch {
	case attrs != nil:
		a = Attributes{User: u, Verb: attrs.Verb, Resource: reviewedResource(served, attrs), Namespace: attrs.Namespace,
			Name: attrs.Name, Subresource: attrs.Subresource, FieldSelector: fieldSelector}
	case nonResource != nil:
		a = Attributes{User: u, Verb: nonResource.Verb, Path: nonResource.Path}
	default:
		return authzv1.SubjectAccessReviewStatus{}
	}
	d, reason, err := z.Authorize(ctx, a)
	st := authzv1.SubjectAccessReviewStatus{Allowed: d == DecisionAllow, Denied: d == DecisionDeny, Reason: reason}
	if err != nil {
		st.EvaluationError = err.Error()
	}
	return st
}

func reviewedResource(served iter.Seq[*registry.Resource], attrs *authzv1.ResourceAttributes) *registry.Resource {
	for res := range served {
		if res.GVK.Group == attrs.Group && res.Plural == attrs.Resource && (attrs.Version == "" || attrs.Version == "*" || res.GVK.Version == attrs.Version) {
			return res
		}
	}
	return &registry.Resource{GVK: schema.GroupVersionKind{Group: attrs.Group, Version: attrs.Version}, Plural: attrs.Resource, Namespaced: attrs.Namespace != ""}
}

// ReviewSubject answers a SubjectAccessReview: may the user the spec
// describes do what it asks? Node agents ask it about the requests to
// their kubelet API (the kubelet's Webhook authorization mode), e.g.
// whether the API server's kubelet client may get nodes/proxy. A node's
// list and watch of pods are allowed by their field selector, which the
// spec carries.
func ReviewSubject(ctx context.Context, z Authorizer, served iter.Seq[*registry.Resource], spec *authzv1.SubjectAccessReviewSpec) authzv1.SubjectAccessReviewStatus {
	u := request.User{Name: spec.User, UID: spec.UID, Groups: spec.Groups}
	if len(spec.Extra) > 0 {
		u.Extra = make(map[string][]string, len(spec.Extra))
		for k, v := range spec.Extra {
			u.Extra[k] = v
		}
	}
	fieldSelector := ""
	if a := spec.ResourceAttributes; a != nil && a.FieldSelector != nil {
		fieldSelector = a.FieldSelector.RawSelector
	}
	return Review(ctx, z, served, u, spec.ResourceAttributes, spec.NonResourceAttributes, fieldSelector)
}
