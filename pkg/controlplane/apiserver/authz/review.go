package authz

import (
	"context"
	"iter"

	authzv1 "k8s.io/api/authorization/v1"

	"github.com/nodeagent/nodeagent/pkg/controlplane/apiserver/request"
	"github.com/nodeagent/nodeagent/pkg/controlplane/registry"
)

// Review answers "may u do this?" (a SelfSubjectAccessReview's or
// SubjectAccessReview's resource attributes) with the authorizer that
// guards the requests themselves, as if u had sent the request: the
// attributes name a served resource (any version for "" or "*"), and
// fieldSelector is the request's (a node's list and watch of pods).
// Non-resource reviews are allowed for the admin only, for now.
func Review(ctx context.Context, z Authorizer, served iter.Seq[*registry.Resource], u request.User, attrs *authzv1.ResourceAttributes, fieldSelector string) bool {
	if IsMaster(u) {
		return true
	}
	if attrs == nil {
		return false // non-resource URLs: only the admin, for now
	}
	for res := range served {
		if res.GVK.Group != attrs.Group || res.Plural != attrs.Resource || (attrs.Version != "" && attrs.Version != "*" && res.GVK.Version != attrs.Version) {
			continue
		}
		return Check(ctx, z, Attributes{User: u, Verb: attrs.Verb, Resource: res, Namespace: attrs.Namespace,
			Name: attrs.Name, Subresource: attrs.Subresource, FieldSelector: fieldSelector}) == nil
	}
	return false
}

// ReviewSubject answers a SubjectAccessReview: may the user the spec
// describes do what it asks? Node agents ask it about the requests to
// their kubelet API (the kubelet's Webhook authorization mode), e.g.
// whether the API server's kubelet client may get nodes/proxy. A node's
// list and watch of pods are allowed by their field selector, which the
// spec carries.
func ReviewSubject(ctx context.Context, z Authorizer, served iter.Seq[*registry.Resource], spec *authzv1.SubjectAccessReviewSpec) authzv1.SubjectAccessReviewStatus {
	u := request.User{Name: spec.User, Groups: spec.Groups}
	fieldSelector := ""
	if a := spec.ResourceAttributes; a != nil && a.FieldSelector != nil {
		fieldSelector = a.FieldSelector.RawSelector
	}
	return authzv1.SubjectAccessReviewStatus{Allowed: Review(ctx, z, served, u, spec.ResourceAttributes, fieldSelector)}
}
