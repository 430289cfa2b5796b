package apiserver

import (
	"context"

	admissionv1 "k8s.io/api/admission/v1"
	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/nodeagent/nodeagent/pkg/controlplane/apiserver/authz"
	"github.com/nodeagent/nodeagent/pkg/controlplane/apiserver/podrefs"
	"github.com/nodeagent/nodeagent/pkg/controlplane/apiserver/request"
)

// restrictNode is upstream's NodeRestriction admission: the node
// authorizer and the system:node rules let a node write pods, nodes and
// leases and request service account tokens broadly; this narrows the
// writes to the node's own objects and the tokens to its pods.
func (s *Server) restrictNode(ctx context.Context, u request.User, a *attributes) error {
	if !authz.HasGroup(u, authz.NodesGroup) {
		return nil
	}
	node, ok := authz.NodeName(u)
	if !ok {
		return admissionForbidden(a, "could not determine node from user %q", u.Name)
	}
	switch groupResource(a.res).String() {
	case "pods":
		return s.restrictNodePod(ctx, node, a)
	case "nodes":
		return restrictNodeNode(node, a)
	case "leases.coordination.k8s.io":
		return restrictNodeLease(node, a)
	case "serviceaccounts":
		return s.restrictNodeToken(ctx, u, node, a)
	}
	return nil
}

func (s *Server) restrictNodePod(ctx context.Context, node string, a *attributes) error {
	switch a.subresource {
	case "":
		switch a.op {
		case admissionv1.Create:
			return s.restrictMirrorPod(ctx, node, a)
		case admissionv1.Delete:
			if a.old.(*v1.Pod).Spec.NodeName != node {
				return admissionForbidden(a, "node %q can only delete pods with spec.nodeName set to itself", node)
			}
			return nil
		}
		return admissionForbidden(a, "unexpected operation %q, node %q can only create and delete mirror pods", a.op, node)
	case "status":
		return restrictNodePodStatus(node, a)
	case "eviction":
		return s.restrictNodeEviction(ctx, node, a)
	}
	return admissionForbidden(a, "unexpected pod subresource %q, only 'status' and 'eviction' are allowed", a.subresource)
}

// restrictNodeEviction: evictions only of pods bound to the node.
func (s *Server) restrictNodeEviction(ctx context.Context, node string, a *attributes) error {
	if a.op != admissionv1.Create {
		return admissionForbidden(a, "unexpected operation %s", a.op)
	}
	name := a.name // the URL's pod, before the Eviction's name
	if m, err := meta.Accessor(a.obj); name == "" && err == nil {
		name = m.GetName()
	}
	if name == "" {
		return admissionForbidden(a, "could not determine pod from request data")
	}
	obj, err := s.store("/v1/pods").Get(ctx, a.namespace, name)
	if apierrors.IsNotFound(err) {
		return err
	}
	if err != nil {
		return admissionForbidden(a, "%v", err)
	}
	if obj.(*v1.Pod).Spec.NodeName != node {
		return admissionForbidden(a, "node %s can only evict pods with spec.nodeName set to itself", node)
	}
	return nil
}

// restrictMirrorPod: a node creates only mirror pods of its static pods,
// bound to and owned by its Node, referring to no other API object (the
// node could read them through the node authorizer otherwise).
func (s *Server) restrictMirrorPod(ctx context.Context, node string, a *attributes) error {
	pod := a.obj.(*v1.Pod)
	if _, ok := pod.Annotations[v1.MirrorPodAnnotationKey]; !ok {
		return admissionForbidden(a, "pod does not have %q annotation, node %q can only create mirror pods", v1.MirrorPodAnnotationKey, node)
	}
	if pod.Spec.NodeName != node {
		return admissionForbidden(a, "node %q can only create pods with spec.nodeName set to itself", node)
	}
	if err := s.checkMirrorPodOwner(ctx, node, a, pod); err != nil {
		return err
	}
	if ref := podrefs.APIReference(pod); ref != "" {
		return admissionForbidden(a, "node %q can not create pods that reference %s", node, ref)
	}
	return nil
}

func (s *Server) checkMirrorPodOwner(ctx context.Context, node string, a *attributes, pod *v1.Pod) error {
	switch len(pod.OwnerReferences) {
	case 0:
		return admissionForbidden(a, "node %q can only create pods with an owner reference set to itself", node)
	case 1:
	default:
		return admissionForbidden(a, "node %q can only create pods with a single owner reference set to itself", node)
	}
	owner := pod.OwnerReferences[0]
	if owner.APIVersion != v1.SchemeGroupVersion.String() || owner.Kind != "Node" || owner.Name != node {
		return admissionForbidden(a, "node %q can only create pods with an owner reference set to itself", node)
	}
	if owner.Controller == nil || !*owner.Controller {
		return admissionForbidden(a, "node %q can only create pods with a controller owner reference set to itself", node)
	}
	if owner.BlockOwnerDeletion != nil && *owner.BlockOwnerDeletion {
		return admissionForbidden(a, "node %q must not set blockOwnerDeletion on an owner reference", node)
	}
	obj, err := s.store("/v1/nodes").Get(ctx, "", node)
	if apierrors.IsNotFound(err) {
		return err
	}
	if err != nil {
		return admissionForbidden(a, "error looking up node %s to verify uid: %v", node, err)
	}
	if uid := obj.(*v1.Node).UID; owner.UID != uid {
		return admissionForbidden(a, "node %s UID mismatch: expected %s got %s", node, owner.UID, uid)
	}
	return nil
}

// restrictNodePodStatus: status only of the node's own pods, and no label
// changes smuggled in through it.
func restrictNodePodStatus(node string, a *attributes) error {
	if a.op != admissionv1.Update {
		return admissionForbidden(a, "unexpected operation %q", a.op)
	}
	old, pod := a.old.(*v1.Pod), a.obj.(*v1.Pod)
	if old.Spec.NodeName != node {
		return admissionForbidden(a, "node %q can only update pod status for pods with spec.nodeName set to itself", node)
	}
	if !labels.Equals(old.Labels, pod.Labels) {
		return admissionForbidden(a, "node %q cannot update labels through pod status", node)
	}
	if !sameClaimStatuses(old.Status.ResourceClaimStatuses, pod.Status.ResourceClaimStatuses) {
		return admissionForbidden(a, "node %q cannot update resource claim statues", node) // sic, upstream's words
	}
	if !apiequality.Semantic.DeepEqual(old.Status.ExtendedResourceClaimStatus, pod.Status.ExtendedResourceClaimStatus) {
		return admissionForbidden(a, "node %q cannot update extended resource claim status", node)
	}
	return nil
}

func sameClaimStatuses(a, b []v1.PodResourceClaimStatus) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i].ResourceClaimName, b[i].ResourceClaimName
		if a[i].Name != b[i].Name || (x == nil) != (y == nil) || (x != nil && *x != *y) {
			return false
		}
	}
	return true
}
