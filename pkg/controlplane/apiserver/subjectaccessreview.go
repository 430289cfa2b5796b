package apiserver

import (
	"net/http"
	"net/url"

	authzv1 "k8s.io/api/authorization/v1"

	"github.com/nodeagent/nodeagent/pkg/controlplane/apiserver/request"
)

// reviewSubjectAccess answers a SubjectAccessReview: may the user the spec
// describes do what it asks? It is answered by the same authorizer that
// guards requests (reviewAccess), as if that user had sent the request.
// Node agents ask it about the requests to their kubelet API (the
// kubelet's Webhook authorization mode), e.g. whether the API server's
// kubelet client may get nodes/proxy.
func (s *Server) reviewSubjectAccess(r *http.Request, spec *authzv1.SubjectAccessReviewSpec) authzv1.SubjectAccessReviewStatus {
	as := r.Clone(request.WithUser(r.Context(), request.User{Name: spec.User, Groups: spec.Groups}))
	// A node's list and watch of pods are allowed by their field
	// selector, which the authorizer reads from the query.
	as.URL = &url.URL{Path: r.URL.Path}
	if a := spec.ResourceAttributes; a != nil && a.FieldSelector != nil && a.FieldSelector.RawSelector != "" {
		as.URL.RawQuery = url.Values{"fieldSelector": {a.FieldSelector.RawSelector}}.Encode()
	}
	return authzv1.SubjectAccessReviewStatus{Allowed: s.reviewAccess(as, spec.ResourceAttributes)}
}
