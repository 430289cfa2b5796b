package authz

import (
	"context"
	"slices"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/validation/path"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/nodeagent/nodeagent/pkg/podrefs"
)

// PodReader reads pods as the node authorizer needs them: one pod (the
// store's errors unchanged: NotFound is told apart), a namespace's pods,
// and whether a namespace has a pod that matches.
type PodReader interface {
	GetPod(ctx context.Context, namespace, name string) (*v1.Pod, error)
	ListPods(ctx context.Context, namespace string) ([]*v1.Pod, error)
	// FindPod may answer from a cache that lags the store, as upstream's
	// node authorizer answers from its graph, which informers feed; but
	// not "none" while the store has one (a pod bound a moment ago).
	FindPod(ctx context.Context, namespace string, match func(*v1.Pod) bool) (bool, error)
}

// ClaimLister lists the persistent volume claims of every namespace.
type ClaimLister interface {
	ListClaims(ctx context.Context) ([]*v1.PersistentVolumeClaim, error)
}

var (
	readVerbs  = map[string]bool{"get": true, "list": true, "watch": true}
	writeVerbs = map[string]bool{"create": true, "update": true, "patch": true}
)

// NodeAuthorizer is the node authorizer with the system:node rules: a
// node reads cluster-wide what an agent needs (nodes, services,
// endpoints, namespaces, runtime classes), sees only the pods bound to
// it and reads only the secrets, config maps, claims and volumes those
// pods use. Writes of nodes, leases and pods pass here as upstream's
// rules let them; the NodeRestriction admission narrows them to the
// node's own objects. It allows or has no opinion, never denies;
// non-resource requests and other users are not its business.
type NodeAuthorizer struct {
	Pods   PodReader
	Claims ClaimLister
}

// Authorize allows what the node's rules allow.
func (z *NodeAuthorizer) Authorize(ctx context.Context, a Attributes) (Decision, string, error) {
	node, ok := NodeName(a.User)
	if !ok || !a.IsResourceRequest() {
		return DecisionNoOpinion, "", nil
	}
	if !z.allows(ctx, node, a) {
		return DecisionNoOpinion, z.refusalReason(ctx, node, a), nil
	}
	return DecisionAllow, "", nil
}

// refusalReason is upstream's reason for a refusal of the node
// authorizer's own, where it gives one (the Forbidden message ends with
// it): leases, pods, and the objects a node reaches through its pods
// (secrets, config maps, claims, volumes, service account tokens), as
// upstream's authorizeReadNamespacedObject, authorizeGet,
// authorizeStatusUpdate and authorizeCreateToken word them.
func (z *NodeAuthorizer) refusalReason(ctx context.Context, node string, a Attributes) string {
	switch a.Resource.GVK.Group + "/" + a.Resource.Plural {
	case "coordination.k8s.io/leases":
		return leaseRefusal(node, a)
	case "/nodes":
		_, reason := nodeAccess(node, a)
		return reason
	case "/pods":
		switch {
		case a.Subresource != "":
		case a.Verb == "get":
			return noRelationship(node)
		case a.Verb == "list" || a.Verb == "watch":
			if _, ok := singleObject(a); ok {
				return noRelationship(node)
			}
			return "can only list/watch pods with spec.nodeName field selector"
		}
	case "/secrets", "/configmaps":
		switch {
		case !readVerbs[a.Verb]:
			return "can only read resources of this type"
		case a.Subresource != "":
			return "cannot read subresource"
		case a.Namespace == "":
			return "can only read namespaced object of this type"
		}
		if _, ok := singleObject(a); !ok {
			return "No Object name found"
		}
		return noRelationship(node)
	case "/persistentvolumeclaims":
		if a.Subresource == "status" {
			return z.claimStatusRefusal(ctx, node, a)
		}
		return getRefusal(node, a)
	case "/persistentvolumes":
		return getRefusal(node, a)
	case "/serviceaccounts":
		switch {
		case a.Verb != "create" || a.Name == "":
			return "can only create tokens for individual service accounts"
		case a.Subresource != "token":
			return "can only create token subresource of serviceaccount"
		}
		return noRelationship(node)
	}
	return ""
}

// noRelationship is upstream's reason for an object no pod of the node
// leads to (or that does not exist).
func noRelationship(node string) string {
	return "no relationship found between node '" + node + "' and this object"
}

// getRefusal is upstream's authorizeGet: one object, read whole.
func getRefusal(node string, a Attributes) string {
	switch {
	case a.Verb != "get":
		return "can only get individual resources of this type"
	case a.Subresource != "":
		return "cannot get subresource"
	case a.Name == "":
		return "No Object name found"
	}
	return noRelationship(node)
}

// claimStatusRefusal is upstream's authorizeStatusUpdate for claims.
// Upstream lets a node write the status of its pods' claims (with
// NodeRestriction narrowing the fields); this server's admission has no
// such narrowing, so it refuses those writes too, and upstream has no
// reason to give for them.
func (z *NodeAuthorizer) claimStatusRefusal(ctx context.Context, node string, a Attributes) string {
	switch {
	case a.Verb != "update" && a.Verb != "patch":
		return "can only get/update/patch this type"
	case a.Name == "":
		return "No Object name found"
	case slices.Contains(z.nodeClaimNames(ctx, node, a.Namespace), a.Name):
		return ""
	}
	return noRelationship(node)
}

// leaseRefusal is upstream's authorizeLease: get, create, update, patch
// and delete of the node's own lease in kube-node-lease (a create's name
// is NodeRestriction's to check); "" allows.
func leaseRefusal(node string, a Attributes) string {
	switch {
	case a.Verb != "get" && !writeVerbs[a.Verb] && a.Verb != "delete":
		return "can only get, create, update, patch, or delete a node lease"
	case a.Namespace != v1.NamespaceNodeLease:
		return `can only access leases in the "` + v1.NamespaceNodeLease + `" system namespace`
	case a.Verb != "create" && a.Name != node:
		return "can only access node lease with the same name as the requesting node"
	}
	return ""
}

func (z *NodeAuthorizer) allows(ctx context.Context, node string, a Attributes) bool {
	res := a.Resource
	switch res.GVK.Group + "/" + res.Plural {
	case "/nodes":
		ok, _ := nodeAccess(node, a)
		return ok
	case "coordination.k8s.io/leases":
		return leaseRefusal(node, a) == ""
	case "/events", "events.k8s.io/events":
		return a.Verb == "create" || a.Verb == "update" || a.Verb == "patch"
	case "/services":
		// Upstream's system:node rules: the service environment variables.
		return readVerbs[a.Verb]
	case "/endpoints":
		return a.Verb == "get" && a.Subresource == ""
	case "node.k8s.io/runtimeclasses":
		// The agent resolves a pod's runtimeClassName to its CRI handler
		// (upstream's system:node role: get, list, watch).
		return readVerbs[a.Verb]
	case "authentication.k8s.io/tokenreviews", "authorization.k8s.io/selfsubjectaccessreviews", "authorization.k8s.io/subjectaccessreviews":
		return true // agents authorize requests to their kubelet API with these
	case "/pods":
		return z.nodeMayAccessPod(ctx, node, a)
	case "/serviceaccounts":
		// Tokens for the service accounts of the node's pods (projected volumes).
		return a.Subresource == "token" && a.Verb == "create" && z.nodeRunsServiceAccount(ctx, node, a.Namespace, a.Name)
	case "/secrets", "/configmaps":
		name, ok := singleObject(a)
		return ok && z.usedByNodePod(ctx, node, res.Plural, a.Namespace, name)
	case "/persistentvolumeclaims":
		return z.nodeMayGetClaim(ctx, node, a)
	case "/persistentvolumes":
		return z.nodeMayGetVolume(ctx, node, a)
	case "certificates.k8s.io/certificatesigningrequests":
		// Serving (and client) certificates for itself; what it may ask
		// for is the approver's and signer's business, as upstream.
		return a.Subresource == "" && (a.Verb == "create" || readVerbs[a.Verb])
	}
	return false
}

// nodeAccess is upstream's authorizeNode, with its reason for a
// refusal where it gives one: nodes are created, updated and patched
// (NodeRestriction narrows that to the node's own), their status updated
// and patched, and read only by the node itself, by name or by a
// metadata.name field selector. No delete and none of the kubelet API
// subresources (proxy, stats, metrics, log, configz, checkpoint, pods),
// not even the node's own. The agent's service proxy and kubenet read
// every Node through RBAC instead: the server binds system:node-proxier
// to system:nodes (the binding a cluster admin creates for agents on a
// real cluster).
func nodeAccess(node string, a Attributes) (allowed bool, reason string) {
	switch {
	case a.Subresource == "status":
		return a.Verb == "update" || a.Verb == "patch", ""
	case a.Subresource != "":
		return false, ""
	case writeVerbs[a.Verb]:
		return true, ""
	case !readVerbs[a.Verb]:
		return false, ""
	}
	switch name, _ := requestName(a); name {
	case node:
		return true, ""
	case "":
		return false, "node '" + node + "' cannot read all nodes, only its own Node object"
	default:
		return false, "node '" + node + "' cannot read '" + name + "', only its own Node object"
	}
}

// nodeMayAccessPod: lists and watches only with spec.nodeName=<node> or
// of one pod bound to the node, reads of one pod only when it is bound to
// the node. Creates (mirror
// pods, evictions), deletes and status writes pass as upstream's rules
// let them, for NodeRestriction to narrow; the pod itself is not
// updated by nodes, and no other subresource is theirs to read or write
// (ephemeral containers are a user's debugging tool, log and exec the
// node's own API).
func (z *NodeAuthorizer) nodeMayAccessPod(ctx context.Context, node string, a Attributes) bool {
	switch a.Verb {
	case "list", "watch":
		if a.Subresource != "" {
			return false
		}
		sel, err := fields.ParseSelector(a.FieldSelector)
		if err != nil {
			return false
		}
		if v, ok := sel.RequiresExactMatch("spec.nodeName"); ok && v == node {
			return true
		}
		// As upstream: a list or watch of one pod (metadata.name=NAME, in
		// a namespace) bound to the node.
		name, ok := singleObject(a)
		if !ok {
			return false
		}
		pod, err := z.Pods.GetPod(ctx, a.Namespace, name)
		return err == nil && pod.Spec.NodeName == node
	case "create":
		return a.Subresource == "" || a.Subresource == "eviction"
	case "delete":
		return a.Subresource == ""
	case "update", "patch":
		return a.Subresource == "status"
	}
	if a.Subresource != "" {
		return false
	}
	pod, err := z.Pods.GetPod(ctx, a.Namespace, a.Name)
	if err != nil {
		return apierrors.IsNotFound(err) && a.Verb == "get" // let the 404 through
	}
	return pod.Spec.NodeName == node
}

// singleObject is the one named object a read of secrets or config maps
// is for, as upstream's authorizeReadNamespacedObject sees it: a get, or
// a list or watch whose fieldSelector is metadata.name=NAME (what the
// kubelet's watch-based managers send; the request info takes the name
// from it), in a namespace and not of a subresource. A list of a whole
// namespace has no name and is not a node's business.
func singleObject(a Attributes) (string, bool) {
	if !readVerbs[a.Verb] || a.Subresource != "" || a.Namespace == "" {
		return "", false
	}
	return requestName(a)
}

// requestName is the object a request names, as upstream's request info
// resolves it: the path's name, or for a list or watch the name an exact
// metadata.name field selector gives.
func requestName(a Attributes) (string, bool) {
	if a.Verb == "get" || a.Name != "" {
		return a.Name, a.Name != ""
	}
	sel, err := fields.ParseSelector(a.FieldSelector)
	if err != nil {
		return "", false
	}
	name, ok := sel.RequiresExactMatch("metadata.name")
	if !ok || len(path.IsValidPathSegmentName(name)) > 0 {
		return "", false
	}
	return name, name != ""
}

// usedByNodePod reports whether a pod bound to the node refers to the
// secret or config map (volumes, env, envFrom, image pull secrets).
func (z *NodeAuthorizer) usedByNodePod(ctx context.Context, node, kind, ns, name string) bool {
	found, err := z.Pods.FindPod(ctx, ns, func(pod *v1.Pod) bool {
		return pod.Spec.NodeName == node && podRefers(pod, kind, name)
	})
	return err == nil && found
}

func (z *NodeAuthorizer) nodeRunsServiceAccount(ctx context.Context, node, ns, name string) bool {
	found, err := z.Pods.FindPod(ctx, ns, func(pod *v1.Pod) bool {
		return pod.Spec.NodeName == node && pod.Spec.ServiceAccountName == name
	})
	return err == nil && found
}

// podRefers reports whether the pod names the secret or config map
// (kind "secrets" or "configmaps") anywhere.
func podRefers(pod *v1.Pod, kind, name string) bool {
	names := podrefs.ConfigMapNames(pod)
	if kind == "secrets" {
		names = podrefs.SecretNames(pod)
	}
	return slices.Contains(names, name)
}
