package apiserver

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	authnv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/nodeagent/nodeagent/pkg/controlplane/apiserver/responsewriters"
	"github.com/nodeagent/nodeagent/pkg/controlplane/apiserver/tokens"
)

// apiAudiences are the audiences the API server accepts.
func (s *Server) apiAudiences() []string {
	if len(s.cfg.APIAudiences) > 0 {
		return s.cfg.APIAudiences
	}
	if s.cfg.TokenSigner != nil {
		return []string{s.cfg.TokenSigner.Issuer()}
	}
	return nil
}

// createToken serves POST serviceaccounts/{name}/token: upstream's
// TokenREST.Create with pods as the only bound object kind.
func (h *resourceHandler) createToken(ctx context.Context, w http.ResponseWriter, r *http.Request) error {
	signer := h.s.cfg.TokenSigner
	if signer == nil {
		return apierrors.NewServiceUnavailable("service account tokens are not available: the API server has no signing key")
	}
	var req authnv1.TokenRequest
	if err := readBody(r, &req); err != nil {
		return err
	}
	// Mutating admission sees the request as sent (NodeRestriction checks
	// a node's binding and audience before defaulting).
	if err := h.s.admitMutating(ctx, h.attrs(admissionv1.Create, &req, nil)); err != nil {
		return err
	}
	ns, name := h.ri.Namespace, h.ri.Name
	gk := tokens.TokenRequestGVK.GroupKind()
	if req.Name != "" && req.Name != name {
		return apierrors.NewInvalid(gk, name, field.ErrorList{field.Invalid(field.NewPath("metadata", "name"), req.Name, "must match the service account name if specified")})
	}
	if req.Namespace != "" && req.Namespace != ns {
		return apierrors.NewInvalid(gk, name, field.ErrorList{field.Invalid(field.NewPath("metadata", "namespace"), req.Namespace, "must match the service account namespace if specified")})
	}
	obj, err := h.st.Get(ctx, ns, name)
	if err != nil {
		return err
	}
	sa := obj.(*v1.ServiceAccount)

	if len(req.Spec.Audiences) == 0 {
		req.Spec.Audiences = h.s.apiAudiences()
	}
	if req.Spec.ExpirationSeconds == nil { // v1 defaulting
		req.Spec.ExpirationSeconds = new(int64)
		*req.Spec.ExpirationSeconds = tokens.DefaultExpirationSeconds
	}
	req.Name, req.Namespace = sa.Name, sa.Namespace
	now := signer.Now()
	req.CreationTimestamp = metav1.NewTime(now)
	req.Status = authnv1.TokenRequestStatus{}
	if errs := tokens.ValidateTokenRequest(&req); len(errs) != 0 {
		return apierrors.NewInvalid(gk, "", errs)
	}

	claims := tokens.NewClaims(sa, req.Spec.Audiences, now, time.Duration(*req.Spec.ExpirationSeconds)*time.Second, string(newUID()))
	if ref := req.Spec.BoundObjectRef; ref != nil {
		if err := h.s.bindToken(ctx, claims, ns, name, ref); err != nil {
			return err
		}
	}
	tok, err := signer.Sign(claims)
	if err != nil {
		return apierrors.NewInternalError(fmt.Errorf("failed to generate token: %v", err))
	}
	req.Status = authnv1.TokenRequestStatus{
		Token:               tok,
		ExpirationTimestamp: metav1.NewTime(now.Add(time.Duration(*req.Spec.ExpirationSeconds) * time.Second)),
	}
	req.APIVersion, req.Kind = tokens.TokenRequestGVK.GroupVersion().String(), tokens.TokenRequestGVK.Kind
	responsewriters.WriteJSON(w, http.StatusCreated, &req)
	return nil
}

// bindToken checks the bound object and puts it into the claims: a pod
// running as the service account (and its node, when it has one).
func (s *Server) bindToken(ctx context.Context, c *tokens.ServiceAccountClaims, ns, saName string, ref *authnv1.BoundObjectReference) error {
	gvk := schema.FromAPIVersionAndKind(ref.APIVersion, ref.Kind)
	if gvk.Group != "" || gvk.Kind != "Pod" {
		return responsewriters.BadRequest("cannot bind token to object of type %s", gvk.String())
	}
	obj, err := s.store("/v1/pods").Get(ctx, ns, ref.Name)
	if err != nil {
		return err
	}
	pod := obj.(*v1.Pod)
	if pod.Spec.ServiceAccountName != saName {
		return responsewriters.BadRequest("cannot bind token for serviceaccount %q to pod running with different serviceaccount name.", saName)
	}
	if ref.UID != "" && ref.UID != pod.UID {
		return apierrors.NewConflict(schema.GroupResource{Group: gvk.Group, Resource: gvk.Kind}, ref.Name,
			fmt.Errorf("the UID in the bound object reference (%s) does not match the UID in record. The object might have been deleted and then recreated", ref.UID))
	}
	var nodeUID string
	if node := pod.Spec.NodeName; node != "" {
		switch obj, err := s.store("/v1/nodes").Get(ctx, "", node); {
		case err == nil:
			nodeUID = string(obj.(*v1.Node).UID)
		case !apierrors.IsNotFound(err): // a missing node keeps just its name, as upstream
			return apierrors.NewInternalError(err)
		}
	}
	c.BindPod(pod, nodeUID)
	return nil
}

// reviewToken answers a TokenReview with the authentication in front of
// the server, as upstream's TokenReview REST does.
func (s *Server) reviewToken(ctx context.Context, tr *authnv1.TokenReview) error {
	tr.Status = authnv1.TokenReviewStatus{}
	if tr.Spec.Token == "" {
		return responsewriters.BadRequest("token is required for TokenReview in authentication")
	}
	if s.cfg.TokenAuthenticator == nil {
		return nil
	}
	auds := tr.Spec.Audiences
	if len(auds) == 0 {
		auds = s.apiAudiences()
	}
	res, ok, err := s.cfg.TokenAuthenticator(ctx, tr.Spec.Token, auds)
	tr.Status.Authenticated = ok
	if err != nil {
		tr.Status.Error = err.Error()
	}
	if !ok {
		return nil
	}
	if len(auds) > 0 && len(tokens.IntersectAudiences(auds, res.Audiences)) == 0 {
		s.cfg.Logger.Error("error validating audience", "want", auds, "got", res.Audiences)
		return apierrors.NewInternalError(errors.New("error validating audiences"))
	}
	u := res.User
	u.UID, u.Extra = res.UID, res.Extra
	tr.Status.User = userInfo(u)
	tr.Status.Audiences = res.Audiences
	return nil
}
