package authz

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/nodeagent/nodeagent/pkg/controlplane/registry"
)

// TestNodeMayNotUseKubeletSubresources: finding 8 of issue 16. A node
// gets none of a Node's kubelet API subresources, of another node or its
// own, as upstream's authorizeNode; it still registers and reports.
func TestNodeMayNotUseKubeletSubresources(t *testing.T) {
	nodes := &registry.Resource{GVK: schema.GroupVersionKind{Version: "v1", Kind: "Node"}, Plural: "nodes"}
	z := &NodeAuthorizer{}
	allowed := []Attributes{
		{Verb: "get", Name: "n1"},
		{Verb: "list", FieldSelector: "metadata.name=n1"},
		{Verb: "watch", Name: "n1"},
		{Verb: "create", Name: "n1"},
		{Verb: "update", Name: "n1"},
		{Verb: "patch", Name: "n1"},
		{Verb: "update", Name: "n1", Subresource: "status"},
		{Verb: "patch", Name: "n1", Subresource: "status"},
	}
	refused := []Attributes{
		{Verb: "delete", Name: "n1"},
		{Verb: "delete", Name: "n2"},
		{Verb: "deletecollection"},
		{Verb: "get", Name: "n1", Subresource: "status"},
		// Other nodes' objects are RBAC's to give (system:node-proxier).
		{Verb: "get", Name: "n2"},
		{Verb: "list"},
		{Verb: "watch", FieldSelector: "metadata.name=n2"},
	}
	for _, sub := range []string{"proxy", "pods", "stats", "metrics", "configz", "log", "checkpoint", "spec", "healthz"} {
		for _, name := range []string{"n1", "n2"} {
			for _, verb := range []string{"get", "create", "update", "patch", "delete"} {
				refused = append(refused, Attributes{Verb: verb, Name: name, Subresource: sub})
			}
		}
	}
	for _, a := range allowed {
		a.User, a.Resource = nodeUser, nodes
		if d, _, _ := z.Authorize(context.Background(), a); d != DecisionAllow {
			t.Errorf("%s nodes/%s %s: %v, want allowed", a.Verb, a.Name, a.Subresource, d)
		}
	}
	for _, a := range refused {
		a.User, a.Resource = nodeUser, nodes
		if d, _, _ := z.Authorize(context.Background(), a); d != DecisionNoOpinion {
			t.Errorf("%s nodes/%s %s: %v, want no opinion", a.Verb, a.Name, a.Subresource, d)
		}
	}
}

// TestNodeRefusalReasons: upstream's reasons for the node authorizer's
// own refusals of leases, pods and nodes, and its lease rules.
func TestNodeRefusalReasons(t *testing.T) {
	leases := &registry.Resource{GVK: schema.GroupVersionKind{Group: "coordination.k8s.io", Version: "v1", Kind: "Lease"}, Plural: "leases", Namespaced: true}
	nodes := &registry.Resource{GVK: schema.GroupVersionKind{Version: "v1", Kind: "Node"}, Plural: "nodes"}
	other := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "theirs"}, Spec: v1.PodSpec{NodeName: "n2"}}
	z := &NodeAuthorizer{Pods: fakePods{other}}
	for _, tc := range []struct {
		a      Attributes
		allow  bool
		reason string
	}{
		{Attributes{Verb: "get", Resource: leases, Namespace: "kube-node-lease", Name: "n1"}, true, ""},
		{Attributes{Verb: "create", Resource: leases, Namespace: "kube-node-lease"}, true, ""},
		{Attributes{Verb: "get", Resource: leases, Namespace: "kube-node-lease", Name: "n2"}, false, "can only access node lease with the same name as the requesting node"},
		{Attributes{Verb: "update", Resource: leases, Namespace: "default", Name: "n1"}, false, `can only access leases in the "kube-node-lease" system namespace`},
		{Attributes{Verb: "list", Resource: leases, Namespace: "kube-node-lease"}, false, "can only get, create, update, patch, or delete a node lease"},
		{Attributes{Verb: "list", Resource: podsResource, FieldSelector: "spec.nodeName=n1"}, true, ""},
		{Attributes{Verb: "list", Resource: podsResource, FieldSelector: "spec.nodeName=n2"}, false, "can only list/watch pods with spec.nodeName field selector"},
		{Attributes{Verb: "get", Resource: podsResource, Namespace: "ns", Name: "theirs"}, false, "no relationship found between node 'n1' and this object"},
		{Attributes{Verb: "list", Resource: nodes}, false, "node 'n1' cannot read all nodes, only its own Node object"},
		{Attributes{Verb: "get", Resource: nodes, Name: "n2"}, false, "node 'n1' cannot read 'n2', only its own Node object"},
		{Attributes{Verb: "watch", Resource: nodes, FieldSelector: "metadata.name=n2"}, false, "node 'n1' cannot read 'n2', only its own Node object"},
		{Attributes{Verb: "delete", Resource: nodes, Name: "n1"}, false, ""},
	} {
		tc.a.User = nodeUser
		d, reason, err := z.Authorize(context.Background(), tc.a)
		if (d == DecisionAllow) != tc.allow || reason != tc.reason || err != nil {
			t.Errorf("%s %s %s/%s %q: %v %q %v, want allowed %v %q", tc.a.Verb, tc.a.Resource.Plural, tc.a.Namespace, tc.a.Name, tc.a.FieldSelector, d, reason, err, tc.allow, tc.reason)
		}
	}
}

// TestNodeRulesForOtherResources: upstream's system:node rules for what
// the node authorizer does not subdivide: services read (environment
// variables), endpoints get only; namespaces and EndpointSlices are not a
// node's (the service proxy reads slices through system:node-proxier).
func TestNodeRulesForOtherResources(t *testing.T) {
	res := func(group, kind, plural string, namespaced bool) *registry.Resource {
		return &registry.Resource{GVK: schema.GroupVersionKind{Group: group, Version: "v1", Kind: kind}, Plural: plural, Namespaced: namespaced}
	}
	services := res("", "Service", "services", true)
	endpoints := res("", "Endpoints", "endpoints", true)
	namespaces := res("", "Namespace", "namespaces", false)
	slices := res("discovery.k8s.io", "EndpointSlice", "endpointslices", true)
	z := &NodeAuthorizer{}
	for _, tc := range []struct {
		a     Attributes
		allow bool
	}{
		{Attributes{Verb: "list", Resource: services}, true},
		{Attributes{Verb: "watch", Resource: services}, true},
		{Attributes{Verb: "create", Resource: services, Namespace: "default"}, false},
		{Attributes{Verb: "get", Resource: endpoints, Namespace: "default", Name: "x"}, true},
		{Attributes{Verb: "list", Resource: endpoints}, false},
		{Attributes{Verb: "get", Resource: namespaces, Name: "default"}, false},
		{Attributes{Verb: "list", Resource: namespaces}, false},
		{Attributes{Verb: "list", Resource: slices}, false},
		{Attributes{Verb: "watch", Resource: slices}, false},
	} {
		tc.a.User = nodeUser
		if d, _, _ := z.Authorize(context.Background(), tc.a); (d == DecisionAllow) != tc.allow {
			t.Errorf("%s %s: %v, want allowed %v", tc.a.Verb, tc.a.Resource.Plural, d, tc.allow)
		}
	}
}
