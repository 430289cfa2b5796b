package apiserver

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/fields"

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
func (s *Server) authorize(r *http.Request, res *registry.Resource, ri requestInfo) error {
	u, ok := UserFrom(r.Context())
	if !ok {
		return nil // no authentication in front (tests of the handler alone)
	}
	if isMaster(u) || res.Virtual {
		return nil // reviews are open to every authenticated user (upstream's system:basic-user)
	}
	if node, ok := nodeName(u); ok && s.authorizeNode(r, node, res, ri) {
		return nil
	}
	return forbidden(u, res, ri)
}

func forbidden(u User, res *registry.Resource, ri requestInfo) error {
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

func isMaster(u User) bool { return hasGroup(u, mastersGroup) }

func hasGroup(u User, g string) bool {
	for _, x := range u.Groups {
		if x == g {
			return true
		}
	}
	return false
}

// nodeName returns the node a node credential belongs to.
func nodeName(u User) (string, bool) {
	if !hasGroup(u, nodesGroup) || !strings.HasPrefix(u.Name, nodePrefix) {
		return "", false
	}
	name := strings.TrimPrefix(u.Name, nodePrefix)
	return name, name != ""
}

var readVerbs = map[string]bool{"get": true, "list": true, "watch": true}

// authorizeNode is the node authorizer: a node reads cluster-wide what an
// agent needs (nodes, services, endpoints, namespaces), writes only its own
// Node and Lease, sees and updates only the pods bound to it, and reads
// only the secrets and config maps those pods use.
func (s *Server) authorizeNode(r *http.Request, node string, res *registry.Resource, ri requestInfo) bool {
	switch res.GVK.Group + "/" + res.Plural {
	case "/nodes":
		return readVerbs[ri.Verb] || (ri.Name == node || (ri.Verb == "create" && ri.Name == "")) // create names itself in the body
	case "coordination.k8s.io/leases":
		return ri.Namespace == "kube-node-lease" && (ri.Name == node || ri.Verb == "create")
	case "/events", "events.k8s.io/events":
		return ri.Verb == "create" || ri.Verb == "update" || ri.Verb == "patch"
	case "/services", "/endpoints", "/namespaces":
		return readVerbs[ri.Verb]
	case "authentication.k8s.io/tokenreviews", "authorization.k8s.io/selfsubjectaccessreviews":
		return true
	case "/pods":
		return s.nodeMayAccessPod(r, node, ri)
	case "/serviceaccounts":
		// Tokens for the service accounts of the node's pods (projected volumes).
		return ri.Subresource == "token" && ri.Verb == "create" && s.nodeRunsServiceAccount(r.Context(), node, ri.Namespace, ri.Name)
	case "/secrets", "/configmaps":
		return ri.Verb == "get" && s.usedByNodePod(r.Context(), node, res.Plural, ri.Namespace, ri.Name)
	}
	return false
}

// nodeMayAccessPod: lists and watches only with spec.nodeName=<node>;
// reads and writes of one pod only when it is bound to the node; creates
// only of mirror pods for the node.
func (s *Server) nodeMayAccessPod(r *http.Request, node string, ri requestInfo) bool {
	switch ri.Verb {
	case "list", "watch":
		sel, err := fields.ParseSelector(r.URL.Query().Get("fieldSelector"))
		if err != nil {
			return false
		}
		v, ok := sel.RequiresExactMatch("spec.nodeName")
		return ok && v == node
	case "create":
		return ri.Subresource == "" // mirror pods; bound-to-self is checked at admission time later
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

func podRefers(pod *v1.Pod, kind, name string) bool {
	secret := kind == "secrets"
	if secret {
		for _, ref := range pod.Spec.ImagePullSecrets {
			if ref.Name == name {
				return true
			}
		}
	}
	for _, vol := range pod.Spec.Volumes {
		if secret && vol.Secret != nil && vol.Secret.SecretName == name {
			return true
		}
		if !secret && vol.ConfigMap != nil && vol.ConfigMap.Name == name {
			return true
		}
		if vol.Projected != nil {
			for _, src := range vol.Projected.Sources {
				if (secret && src.Secret != nil && src.Secret.Name == name) || (!secret && src.ConfigMap != nil && src.ConfigMap.Name == name) {
					return true
				}
			}
		}
	}
	for _, c := range allPodContainers(pod) {
		for _, e := range c.EnvFrom {
			if (secret && e.SecretRef != nil && e.SecretRef.Name == name) || (!secret && e.ConfigMapRef != nil && e.ConfigMapRef.Name == name) {
				return true
			}
		}
		for _, e := range c.Env {
			if e.ValueFrom == nil {
				continue
			}
			if (secret && e.ValueFrom.SecretKeyRef != nil && e.ValueFrom.SecretKeyRef.Name == name) ||
				(!secret && e.ValueFrom.ConfigMapKeyRef != nil && e.ValueFrom.ConfigMapKeyRef.Name == name) {
				return true
			}
		}
	}
	return false
}

func allPodContainers(pod *v1.Pod) []v1.Container {
	return append(append([]v1.Container{}, pod.Spec.InitContainers...), pod.Spec.Containers...)
}
