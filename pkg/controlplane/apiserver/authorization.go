package apiserver

import (
	"context"
	"maps"
	"net/http"

	authzv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/nodeagent/nodeagent/pkg/controlplane/apiserver/authz"
	"github.com/nodeagent/nodeagent/pkg/controlplane/apiserver/request"
	"github.com/nodeagent/nodeagent/pkg/controlplane/registry"
)

var errNotReady = apierrors.NewServiceUnavailable("the API server is starting: its caches are not filled yet")

// authorize asks the authorizer chain (package authz) about a resource
// request. Without a user (no authentication in front: tests of the
// handler alone) everything is allowed.
func (s *Server) authorize(r *http.Request, res *registry.Resource, ri request.Info) error {
	u, ok := request.UserFrom(r.Context())
	if !ok {
		return nil
	}
	return authz.Check(r.Context(), s.authorizers, authz.Attributes{User: u, Verb: ri.Verb, Resource: res,
		Namespace: ri.Namespace, Name: ri.Name, Subresource: ri.Subresource, FieldSelector: r.URL.Query().Get("fieldSelector")})
}

// authorizePath asks the chain about a non-resource request (verb: the
// method in lower case).
func (s *Server) authorizePath(r *http.Request, verb string) error {
	u, ok := request.UserFrom(r.Context())
	if !ok {
		return nil
	}
	return authz.Check(r.Context(), s.authorizers, authz.Attributes{User: u, Verb: verb, Path: r.URL.Path})
}

// reviewAccess answers a SelfSubjectAccessReview ("may I?") with the
// chain that guards the requests themselves.
func (s *Server) reviewAccess(r *http.Request, spec *authzv1.SelfSubjectAccessReviewSpec) authzv1.SubjectAccessReviewStatus {
	u, authenticated := request.UserFrom(r.Context())
	if !authenticated {
		return authzv1.SubjectAccessReviewStatus{Allowed: true}
	}
	return authz.Review(r.Context(), s.authorizers, maps.Values(s.resources), u, spec.ResourceAttributes, spec.NonResourceAttributes,
		r.URL.Query().Get("fieldSelector"))
}

// reviewSubjectAccess answers a SubjectAccessReview about the user its
// spec describes.
func (s *Server) reviewSubjectAccess(r *http.Request, spec *authzv1.SubjectAccessReviewSpec) authzv1.SubjectAccessReviewStatus {
	return authz.ReviewSubject(r.Context(), s.authorizers, maps.Values(s.resources), spec)
}

// confirmNoEscalation is RBAC's escalation prevention on a create (old
// nil) or update, after validation: a user may grant only the rights it
// holds (authz.Escalation). Other objects, and requests without a user,
// pass.
func (s *Server) confirmNoEscalation(ctx context.Context, namespace string, obj, old runtime.Object) error {
	u, ok := request.UserFrom(ctx)
	if !ok || s.escalation.Rules == nil {
		return nil
	}
	return s.escalation.ConfirmWrite(ctx, u, namespace, obj, old)
}
