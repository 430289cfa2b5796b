package apiserver

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	admissionv1 "k8s.io/api/admission/v1"
	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/nodeagent/nodeagent/pkg/controlplane/apiserver/responsewriters"
	"github.com/nodeagent/nodeagent/pkg/controlplane/registry"
)

// notServed are subresources discovery lists that are not served yet:
// services/proxy needs the service's endpoints. (The kubelet's streams
// and nodes/proxy are served by connect, before the verb dispatch.)
var notServed = map[string]bool{"proxy": true}

func errNotServed(sub string) error {
	return apierrors.NewServiceUnavailable(fmt.Sprintf("%s is not available yet: the API server does not proxy to services in this version", sub))
}

// getSubresource serves GET on scale; status and ephemeralcontainers
// answer with the object itself, as upstream.
func (h *resourceHandler) getSubresource(ctx context.Context, w http.ResponseWriter, r *http.Request) error {
	switch {
	case notServed[h.ri.Subresource]:
		return errNotServed(h.res.Plural + "/" + h.ri.Subresource)
	case h.ri.Subresource == "scale":
		obj, err := h.st.Get(ctx, h.ri.Namespace, h.ri.Name)
		if err != nil {
			return err
		}
		responsewriters.WriteJSON(w, http.StatusOK, h.res.GetScale(obj))
		return nil
	}
	return h.get(ctx, w, r)
}

// createSubresource serves POST on binding, eviction and token.
func (h *resourceHandler) createSubresource(ctx context.Context, w http.ResponseWriter, r *http.Request) error {
	switch h.ri.Subresource {
	case "binding":
		return h.bind(ctx, w, r)
	case "eviction":
		return h.evict(ctx, w, r)
	case "token":
		return h.createToken(ctx, w, r)
	}
	if notServed[h.ri.Subresource] {
		return errNotServed(h.res.Plural + "/" + h.ri.Subresource)
	}
	return responsewriters.MethodNotSupported(groupResource(h.res), "create")
}

// bind applies a Binding with the resource's Bind hook (pods: sets
// spec.nodeName once, as the scheduler's Binding does).
func (h *resourceHandler) bind(ctx context.Context, w http.ResponseWriter, r *http.Request) error {
	if h.res.Bind == nil {
		return responsewriters.MethodNotSupported(groupResource(h.res), "create")
	}
	var b v1.Binding
	if err := readBody(r, &b); err != nil {
		return err
	}
	if b.Target.Kind != "" && b.Target.Kind != "Node" {
		return responsewriters.BadRequest("binding target must be a Node, not %q", b.Target.Kind)
	}
	if b.Target.Name == "" {
		return responsewriters.BadRequest("binding target name is required")
	}
	_, err := h.st.Update(ctx, h.ri.Namespace, h.ri.Name, func(cur runtime.Object) (runtime.Object, error) {
		if err := h.res.Bind(cur, &b); err != nil {
			return nil, err
		}
		return cur, nil
	}, dryRun(r))
	if err != nil {
		return err
	}
	responsewriters.WriteJSON(w, http.StatusCreated, &metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusSuccess, Code: http.StatusCreated})
	return nil
}

// evict deletes the pod with the eviction's delete options (no
// PodDisruptionBudgets are served, so none can refuse).
func (h *resourceHandler) evict(ctx context.Context, w http.ResponseWriter, r *http.Request) error {
	var ev policyv1.Eviction
	if err := readBody(r, &ev); err != nil {
		return err
	}
	if err := h.s.admitMutating(ctx, h.attrs(admissionv1.Create, &ev, nil)); err != nil {
		return err
	}
	opts := ev.DeleteOptions
	if opts == nil {
		opts = &metav1.DeleteOptions{}
	}
	if _, err := h.s.deleteObject(ctx, h, h.ri.Namespace, h.ri.Name, opts); err != nil {
		return err
	}
	responsewriters.WriteJSON(w, http.StatusCreated, &metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusSuccess, Code: http.StatusCreated})
	return nil
}

// updateSubresource serves PUT/PATCH on scale and finalize (status and
// ephemeralcontainers take the main update path: wholeObjectSubresources).
func (h *resourceHandler) updateSubresource(ctx context.Context, w http.ResponseWriter, r *http.Request) error {
	switch h.ri.Subresource {
	case "scale":
		return h.updateScale(ctx, w, r)
	case "finalize":
		return h.update(ctx, w, r)
	}
	return responsewriters.MethodNotSupported(groupResource(h.res), h.ri.Verb)
}

func (h *resourceHandler) updateScale(ctx context.Context, w http.ResponseWriter, r *http.Request) error {
	var sc autoscalingv1.Scale
	body, err := readLimitedBody(r)
	if err != nil {
		return err
	}
	if r.Method == http.MethodPatch {
		cur, err := h.st.Get(ctx, h.ri.Namespace, h.ri.Name)
		if err != nil {
			return err
		}
		raw, _ := json.Marshal(h.res.GetScale(cur))
		pt := patchTypeOf(r)
		if body, err = applyPatch(pt, raw, body, &autoscalingv1.Scale{}); err != nil {
			return err
		}
	}
	ct := r.Header.Get("Content-Type")
	if r.Method == http.MethodPatch {
		ct = "application/json"
	}
	if err := decodeInto(ct, body, &sc); err != nil {
		return responsewriters.BadRequest("invalid Scale: %v", err)
	}
	if sc.Spec.Replicas < 0 {
		return apierrors.NewBadRequest(fmt.Sprintf("Scale.Spec.Replicas %d must be >= 0", sc.Spec.Replicas))
	}
	updated, err := h.st.Update(ctx, h.ri.Namespace, h.ri.Name, func(cur runtime.Object) (runtime.Object, error) {
		m, _ := meta.Accessor(cur)
		if sc.ResourceVersion != "" && sc.ResourceVersion != m.GetResourceVersion() {
			return nil, apierrors.NewConflict(groupResource(h.res), m.GetName(), errorString("the object has been modified; please apply your changes to the latest version and try again"))
		}
		if errs := h.res.SetScale(cur, &sc); len(errs) > 0 {
			return nil, apierrors.NewInvalid(autoscalingv1.SchemeGroupVersion.WithKind("Scale").GroupKind(), m.GetName(), errs)
		}
		m.SetGeneration(m.GetGeneration() + 1)
		return cur, nil
	}, dryRun(r))
	if err != nil {
		return err
	}
	responsewriters.WriteJSON(w, http.StatusOK, h.res.GetScale(updated))
	return nil
}

// virtualCreate answers the review APIs, which are computed, not stored.
func (s *Server) virtualCreate(ctx context.Context, w http.ResponseWriter, r *http.Request, res *registry.Resource, obj runtime.Object) error {
	switch o := obj.(type) {
	case *authzv1.SelfSubjectAccessReview:
		if err := invalidReview(res, obj); err != nil {
			return err
		}
		o.Status = s.reviewAccess(r, &o.Spec)
	case *authzv1.SubjectAccessReview:
		if err := invalidReview(res, obj); err != nil {
			return err
		}
		o.Status = s.reviewSubjectAccess(r, &o.Spec)
	case *authnv1.TokenReview:
		if err := s.reviewToken(ctx, o); err != nil {
			return err
		}
	case *authzv1.SelfSubjectRulesReview:
		if err := invalidReview(res, obj); err != nil {
			return err
		}
		if err := s.reviewRules(r, o); err != nil {
			return err
		}
	case *authnv1.SelfSubjectReview:
		s.reviewSelf(r, o)
	default:
		return responsewriters.MethodNotSupported(groupResource(res), "create")
	}
	s.writeObject(w, r, res, http.StatusCreated, obj)
	return nil
}

// invalidReview validates an access review, which upstream refuses with
// a 422 (a TokenReview without a token is a 400 of its own).
func invalidReview(res *registry.Resource, obj runtime.Object) error {
	if res.Validate == nil {
		return nil
	}
	if errs := res.Validate(obj); len(errs) > 0 {
		return apierrors.NewInvalid(res.GVK.GroupKind(), "", errs)
	}
	return nil
}
