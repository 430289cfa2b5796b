package admission

import (
	"context"
	"fmt"

	admissionv1 "k8s.io/api/admission/v1"
	authnv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/nodeagent/nodeagent/pkg/controlplane/apiserver/authz"
	"github.com/nodeagent/nodeagent/pkg/controlplane/apiserver/request"
)

// restrictNodeToken is NodeRestriction on serviceaccounts/token: the node
// authorizer lets a node ask for tokens of its pods' service accounts;
// each token must also be bound to one of its pods (by name and UID), so
// that a node cannot mint tokens that outlive the pods it runs, and be for
// an audience that pod's volumes use (upstream's
// ServiceAccountNodeAudienceRestriction, on by default).
func (p *NodeRestriction) restrictNodeToken(ctx context.Context, u request.User, node string, a *Attributes) error {
	if a.Operation != admissionv1.Create || a.Subresource != "token" {
		return nil
	}
	tr, ok := a.Object.(*authnv1.TokenRequest)
	if !ok {
		return tokenForbidden(a, "unexpected type %T", a.Object)
	}
	ref := tr.Spec.BoundObjectRef
	if ref == nil || ref.APIVersion != "v1" || ref.Kind != "Pod" || ref.Name == "" {
		return tokenForbidden(a, "node requested token not bound to a pod")
	}
	if ref.UID == "" {
		return tokenForbidden(a, "node requested token with a pod binding without a uid")
	}
	pod, err := p.Pods.GetPod(ctx, a.Namespace, ref.Name)
	if apierrors.IsNotFound(err) {
		return err
	}
	if err != nil {
		return tokenForbidden(a, "%w", err)
	}
	if ref.UID != pod.UID {
		return tokenForbidden(a, "the UID in the bound object reference (%s) does not match the UID in record. The object might have been deleted and then recreated", ref.UID)
	}
	if pod.Spec.NodeName != node {
		return tokenForbidden(a, "node requested token bound to a pod scheduled on a different node")
	}
	return checkNodeTokenAudience(u, a, tr, pod)
}

// checkNodeTokenAudience: a node asks for at most one audience ("" is the
// API server's), and only one a projected token volume of the pod names.
// Upstream also accepts the audiences of CSI drivers the pod uses, and
// whatever RBAC grants the node (verb request-serviceaccounts-token-audience);
// this server serves no CSIDriver objects and, without RBAC, grants that
// verb to system:masters only. (With RBAC, this asks the authorizer for
// that verb, the audience as the resource and the service account as the
// name, as upstream does.)
func checkNodeTokenAudience(u request.User, a *Attributes, tr *authnv1.TokenRequest, pod *v1.Pod) error {
	audience := ""
	switch len(tr.Spec.Audiences) {
	case 0:
	case 1:
		audience = tr.Spec.Audiences[0]
	default:
		return tokenForbidden(a, "node may only request 0 or 1 audiences")
	}
	if podUsesAudience(pod, audience) || authz.IsMaster(u) {
		return nil
	}
	return tokenForbidden(a, "audience %q not found in pod spec volume, %s is not authorized to request tokens for this audience", audience, u.Name)
}

func podUsesAudience(pod *v1.Pod, audience string) bool {
	for _, vol := range pod.Spec.Volumes {
		if vol.Projected == nil {
			continue
		}
		for _, src := range vol.Projected.Sources {
			if src.ServiceAccountToken != nil && src.ServiceAccountToken.Audience == audience {
				return true
			}
		}
	}
	return false
}

// tokenForbidden names the service account of the URL, as upstream's
// admission errors name the request's object.
func tokenForbidden(a *Attributes, format string, args ...any) error {
	return apierrors.NewForbidden(a.GroupResource(), a.Name, fmt.Errorf(format, args...))
}
