package apiserver

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/nodeagent/nodeagent/pkg/controlplane/apiserver/request"
	"github.com/nodeagent/nodeagent/pkg/controlplane/registry"
)

var errNotReady = apierrors.NewServiceUnavailable("the API server is starting: its caches are not filled yet")

// Groups with a fixed meaning, as upstream.
const (
	mastersGroup = "system:masters" // all-powerful
	nodesGroup   = "system:nodes"   // node agents: see authorizeNode
	nodePrefix   = "system:node:"
)

// authorize allows the admin everything and a node what the upstream node
// authorizer (with the system:node role) allows it. Full RBAC comes later;
// every other user is refused with upstream's message.
func (s *Server) authorize(r *http.Request, res *registry.Resource, ri request.Info) error {
	u, ok := request.UserFrom(r.Context())
	if !ok {
		return nil // no authentication in front (tests of the handler alone)
	}
	if isMaster(u) || (res.Virtual && !delegatedReview(res)) {
		return nil // reviews are open to every authenticated user (upstream's system:basic-user)
	}
	if node, ok := nodeName(u); ok && s.authorizeNode(r, node, res, ri) {
		return nil
	}
	return forbidden(u, res, ri)
}

// delegatedReview is a review about other users (SubjectAccessReview):
// upstream grants it to the delegating components and nodes, not to
// every user.
func delegatedReview(res *registry.Resource) bool {
	return res.GVK.Group == "authorization.k8s.io" && res.Plural == "subjectaccessreviews"
}

func forbidden(u request.User, res *registry.Resource, ri request.Info) error {
	resource := res.Plural
	if ri.Subresource != "" {
		resource += "/" + ri.Subresource
	}
	msg := fmt.Sprintf("User %q cannot %s resource %q in API group %q", u.Name, ri.Verb, resource, res.GVK.Group)
	if ri.Namespace != "" {
		msg += fmt.Sprintf(" in the namespace %q", ri.Namespace)
	} else if res.Namespaced {
		msg += " at the cluster scope"
	}
	return apierrors.NewForbidden(groupResource(res), ri.Name, fmt.Errorf("%s", msg))
}

func isMaster(u request.User) bool { return hasGroup(u, mastersGroup) }

func hasGroup(u request.User, g string) bool {
	for _, x := range u.Groups {
		if x == g {
			return true
		}
	}
	return false
}

// nodeName returns the node a node credential belongs to.
func nodeName(u request.User) (string, bool) {
	if !hasGroup(u, nodesGroup) || !strings.HasPrefix(u.Name, nodePrefix) {
		return "", false
	}
	name := strings.TrimPrefix(u.Name, nodePrefix)
	return name, name != ""
}

var (
	readVerbs  = map[string]bool{"get": true, "list": true, "watch": true}
	writeVerbs = map[string]bool{"create": true, "update": true, "patch": true}
)

// authorizeNode is the node authorizer with the system:node rules: a node
// reads cluster-wide what an agent needs (nodes, services, endpoints,
// namespaces), sees only the pods bound to it and reads only the secrets,
// config maps, claims and volumes those pods use. Writes of nodes, leases and pods pass
// here as upstream's rules let them; the NodeRestriction admission
// (restrictNode) narrows them to the node's own objects.
func (s *Server) authorizeNode(r *http.Request, node string, res *registry.Resource, ri request.Info) bool {
	switch res.GVK.Group + "/" + res.Plural {
	case "/nodes":
		// Not nodes/proxy (the kubelet API of any node), as upstream.
		return ri.Subresource != "proxy" && (readVerbs[ri.Verb] || writeVerbs[ri.Verb] || ri.Name == node)
	case "coordination.k8s.io/leases":
		return writeVerbs[ri.Verb] || ri.Verb == "delete" || (ri.Namespace == v1.NamespaceNodeLease && ri.Name == node)
	case "/events", "events.k8s.io/events":
		return ri.Verb == "create" || ri.Verb == "update" || ri.Verb == "patch"
	case "/services", "/endpoints", "/namespaces":
		return readVerbs[ri.Verb]
	case "discovery.k8s.io/endpointslices":
		// Upstream's system:node-proxier role: the agent's service proxy
		// runs with the node's credential (on a real cluster, bind that
		// role to the system:nodes group).
		return readVerbs[ri.Verb]
	case "authentication.k8s.io/tokenreviews", "authorization.k8s.io/selfsubjectaccessreviews", "authorization.k8s.io/subjectaccessreviews":
		return true // agents authorize requests to their kubelet API with these
	case "/pods":
		return s.nodeMayAccessPod(r, node, ri)
	case "/serviceaccounts":
		// Tokens for the service accounts of the node's pods (projected volumes).
		return ri.Subresource == "token" && ri.Verb == "create" && s.nodeRunsServiceAccount(r.Context(), node, ri.Namespace, ri.Name)
	case "/secrets", "/configmaps":
		return ri.Verb == "get" && s.usedByNodePod(r.Context(), node, res.Plural, ri.Namespace, ri.Name)
	case "/persistentvolumeclaims":
		return s.nodeMayGetClaim(r.Context(), node, ri)
	case "/persistentvolumes":
		return s.nodeMayGetVolume(r.Context(), node, ri)
	case "certificates.k8s.io/certificatesigningrequests":
		// Serving (and client) certificates for itself; what it may ask
		// for is the approver's and signer's business, as upstream.
		return ri.Subresource == "" && (ri.Verb == "create" || readVerbs[ri.Verb])
	}
	return false
}

// nodeMayAccessPod: lists and watches only with spec.nodeName=<node>,
// reads of one pod only when it is bound to the node. Creates (mirror
// pods, evictions), deletes and status writes pass as upstream's rules
// let them, for NodeRestriction to narrow; the pod itself is not
// updated by nodes, and no other subresource is theirs to read or write
// (ephemeral containers are a user's debugging tool, log and exec the
// node's own API).
func (s *Server) nodeMayAccessPod(r *http.Request, node string, ri request.Info) bool {
	switch ri.Verb {
	case "list", "watch":
		sel, err := fields.ParseSelector(r.URL.Query().Get("fieldSelector"))
		if err != nil {
			return false
		}
		v, ok := sel.RequiresExactMatch("spec.nodeName")
		return ok && v == node
	case "create":
		return ri.Subresource == "" || ri.Subresource == "eviction"
	case "delete":
		return ri.Subresource == ""
	case "update", "patch":
		return ri.Subresource == "status"
	}
	if ri.Subresource != "" {
		return false
	}
	obj, err := s.store("/v1/pods").Get(r.Context(), ri.Namespace, ri.Name)
	if err != nil {
		return apierrors.IsNotFound(err) && ri.Verb == "get" // let the 404 through
	}
	return obj.(*v1.Pod).Spec.NodeName == node
}

// usedByNodePod reports whether a pod bound to the node refers to the
// secret or config map (volumes, env, envFrom, image pull secrets).
func (s *Server) usedByNodePod(ctx context.Context, node, kind, ns, name string) bool {
	list, err := s.store("/v1/pods").List(ctx, ns, storageListAll(nil))
	if err != nil {
		return false
	}
	for _, obj := range list.Items {
		pod := obj.(*v1.Pod)
		if pod.Spec.NodeName == node && podRefers(pod, kind, name) {
			return true
		}
	}
	return false
}

func (s *Server) nodeRunsServiceAccount(ctx context.Context, node, ns, name string) bool {
	list, err := s.store("/v1/pods").List(ctx, ns, storageListAll(nil))
	if err != nil {
		return false
	}
	for _, obj := range list.Items {
		if pod := obj.(*v1.Pod); pod.Spec.NodeName == node && pod.Spec.ServiceAccountName == name {
			return true
		}
	}
	return false
}

// podRefers reports whether the pod names the secret or config map
// (kind "secrets" or "configmaps") anywhere.
func podRefers(pod *v1.Pod, kind, name string) bool {
	names := podConfigMapNames(pod)
	if kind == "secrets" {
		names = podSecretNames(pod)
	}
	return slices.Contains(names, name)
}

func allPodContainers(pod *v1.Pod) []v1.Container {
	return append(append([]v1.Container{}, pod.Spec.InitContainers...), pod.Spec.Containers...)
}
