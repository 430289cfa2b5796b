package authz

import (
	"context"
	"testing"

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
		{Verb: "list"},
		{Verb: "watch", Name: "n1"},
		{Verb: "get", Name: "n2"}, // system:node-proxier: the agent's proxy and kubenet
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
