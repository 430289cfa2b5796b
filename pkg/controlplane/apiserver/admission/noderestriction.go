package admission

import (
	"context"

	admissionv1 "k8s.io/api/admission/v1"
	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/nodeagent/nodeagent/pkg/controlplane/apiserver/authz"
	"github.com/nodeagent/nodeagent/pkg/controlplane/apiserver/request"
	"github.com/nodeagent/nodeagent/pkg/podrefs"
)

// NodeRestriction is upstream's plugin of that name: the node authorizer
// and the system:node rules let a node write pods, nodes and leases and
// request service account tokens broadly; this narrows the writes to the
// node's own objects and the tokens to its pods.
type NodeRestriction struct {
	Pods  PodGetter
	Nodes NodeGetter
}

var _ MutationInterface = (*NodeRestriction)(nil)

// Name is the plugin's upstream name.
func (*NodeRestriction) Name() string { return NodeRestrictionName }

// Handles: creates, updates and deletes.
func (*NodeRestriction) Handles(op admissionv1.Operation) bool {
	return op == admissionv1.Create || op == admissionv1.Update || op == admissionv1.Delete
}

// Admit narrows a node's writes; other users' writes, and the server's
// own (no user), pass.
func (p *NodeRestriction) Admit(ctx context.Context, a *Attributes) error {
	u, ok := request.UserFrom(ctx)
	if !ok {
		return nil
	}
	if !authz.HasGroup(u, authz.NodesGroup) {
		return nil
	}
	node, ok := authz.NodeName(u)
	if !ok {
		return forbidden(a, "could not determine node from user %q", u.Name)
	}
	switch a.GroupResource().String() {
	case "pods":
		return p.restrictNodePod(ctx, node, a)
	case "nodes":
		return restrictNodeNode(node, a)
	case "leases.coordination.k8s.io":
		return restrictNodeLease(node, a)
	case "serviceaccounts":
		return p.restrictNodeToken(ctx, u, node, a)
	}
	return nil
}

func (p *NodeRestriction) restrictNodePod(ctx context.Context, node string, a *Attributes) error {
	switch a.Subresource {
	case "":
		switch a.Operation {
		case admissionv1.Create:
			return p.restrictMirrorPod(ctx, node, a)
		case admissionv1.Delete:
			if a.OldObject.(*v1.Pod).Spec.NodeName != node {
				return forbidden(a, "node %q can only delete pods with spec.nodeName set to itself", node)
			}
			return nil
		}
		return forbidden(a, "unexpected operation %q, node %q can only create and delete mirror pods", a.Operation, node)
	case "status":
		return restrictNodePodStatus(node, a)
	case "eviction":
		return p.restrictNodeEviction(ctx, node, a)
	}
	return forbidden(a, "unexpected pod subresource %q, only 'status' and 'eviction' are allowed", a.Subresource)
}

// restrictNodeEviction: evictions only of pods bound to the node.
func (p *NodeRestriction) restrictNodeEviction(ctx context.Context, node string, a *Attributes) error {
	if a.Operation != admissionv1.Create {
		return forbidden(a, "unexpected operation %s", a.Operation)
	}
	name := a.Name // the URL's pod, before the Eviction's name
	if m, err := meta.Accessor(a.Object); name == "" && err == nil {
		name = m.GetName()
	}
	if name == "" {
		return forbidden(a, "could not determine pod from request data")
	}
	pod, err := p.Pods.GetPod(ctx, a.Namespace, name)
	if apierrors.IsNotFound(err) {
		return err
	}
	if err != nil {
		return forbidden(a, "%v", err)
	}
	if pod.Spec.NodeName != node {
		return forbidden(a, "node %s can only evict pods with spec.nodeName set to itself", node)
	}
	return nil
}

// restrictMirrorPod: a node creates only mirror pods of its static pods,
// bound to and owned by its Node, referring to no other API object (the
// node could read them through the node authorizer otherwise).
func (p *NodeRestriction) restrictMirrorPod(ctx context.Context, node string, a *Attributes) error {
	pod := a.Object.(*v1.Pod)
	if _, ok := pod.Annotations[v1.MirrorPodAnnotationKey]; !ok {
		return forbidden(a, "pod does not have %q annotation, node %q can only create mirror pods", v1.MirrorPodAnnotationKey, node)
	}
	if pod.Spec.NodeName != node {
		return forbidden(a, "node %q can only create pods with spec.nodeName set to itself", node)
	}
	if err := p.checkMirrorPodOwner(ctx, node, a, pod); err != nil {
		return err
	}
	if ref := podrefs.APIReference(pod); ref != "" {
		return forbidden(a, "node %q can not create pods that reference %s", node, ref)
	}
	return nil
}

func (p *NodeRestriction) checkMirrorPodOwner(ctx context.Context, node string, a *Attributes, pod *v1.Pod) error {
	switch len(pod.OwnerReferences) {
	case 0:
		return forbidden(a, "node %q can only create pods with an owner reference set to itself", node)
	case 1:
	default:
		return forbidden(a, "node %q can only create pods with a single owner reference set to itself", node)
	}
	owner := pod.OwnerReferences[0]
	if owner.APIVersion != v1.SchemeGroupVersion.String() || owner.Kind != "Node" || owner.Name != node {
		return forbidden(a, "node %q can only create pods with an owner reference set to itself", node)
	}
	if owner.Controller == nil || !*owner.Controller {
		return forbidden(a, "node %q can only create pods with a controller owner reference set to itself", node)
	}
	if owner.BlockOwnerDeletion != nil && *owner.BlockOwnerDeletion {
		return forbidden(a, "node %q must not set blockOwnerDeletion on an owner reference", node)
	}
	n, err := p.Nodes.GetNode(ctx, node)
	if apierrors.IsNotFound(err) {
		return err
	}
	if err != nil {
		return forbidden(a, "error looking up node %s to verify uid: %v", node, err)
	}
	if uid := n.UID; owner.UID != uid {
		return forbidden(a, "node %s UID mismatch: expected %s got %s", node, owner.UID, uid)
	}
	return nil
}

// restrictNodePodStatus: status only of the node's own pods, and no label
// changes smuggled in through it.
func restrictNodePodStatus(node string, a *Attributes) error {
	if a.Operation != admissionv1.Update {
		return forbidden(a, "unexpected operation %q", a.Operation)
	}
	old, pod := a.OldObject.(*v1.Pod), a.Object.(*v1.Pod)
	if old.Spec.NodeName != node {
		return forbidden(a, "node %q can only update pod status for pods with spec.nodeName set to itself", node)
	}
	if !labels.Equals(old.Labels, pod.Labels) {
		return forbidden(a, "node %q cannot update labels through pod status", node)
	}
	if !sameClaimStatuses(old.Status.ResourceClaimStatuses, pod.Status.ResourceClaimStatuses) {
		return forbidden(a, "node %q cannot update resource claim statues", node) // sic, upstream's words
	}
	if !apiequality.Semantic.DeepEqual(old.Status.ExtendedResourceClaimStatus, pod.Status.ExtendedResourceClaimStatus) {
		return forbidden(a, "node %q cannot update extended resource claim status", node)
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
