package authz

import (
	"context"
	"errors"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/nodeagent/nodeagent/pkg/controlplane/apiserver/request"
	"github.com/nodeagent/nodeagent/pkg/controlplane/registry"
)

// TestChainOrder: the links in the documented order (doc.go), as
// kube-apiserver's: the privileged group, Node, RBAC.
func TestChainOrder(t *testing.T) {
	want := []string{"system:masters", "Node"}
	if got := New(Data{}).Names(); !slices.Equal(got, want) {
		t.Errorf("chain %v, want %v", got, want)
	}
	want = append(want, "RBAC")
	if got := New(Data{RBAC: &fakeRBAC{}}).Names(); !slices.Equal(got, want) {
		t.Errorf("chain with RBAC %v, want %v", got, want)
	}
}

// TestChainFirstDecisionWins: a deny stops the chain as an allow does;
// errors of undecided links are returned with no opinion.
func TestChainFirstDecisionWins(t *testing.T) {
	answer := func(d Decision, err error) Authorizer {
		return AuthorizerFunc(func(context.Context, Attributes) (Decision, string, error) { return d, "", err })
	}
	failed := errors.New("failed")
	cases := []struct {
		name  string
		chain Chain
		want  Decision
		err   bool
	}{
		{"allow", Chain{{"a", answer(DecisionNoOpinion, nil)}, {"b", answer(DecisionAllow, nil)}, {"c", answer(DecisionDeny, nil)}}, DecisionAllow, false},
		{"deny", Chain{{"a", answer(DecisionDeny, nil)}, {"b", answer(DecisionAllow, nil)}}, DecisionDeny, false},
		{"no opinion", Chain{{"a", answer(DecisionNoOpinion, failed)}}, DecisionNoOpinion, true},
		{"empty", nil, DecisionNoOpinion, false},
	}
	for _, tc := range cases {
		d, _, err := tc.chain.Authorize(context.Background(), Attributes{})
		if d != tc.want || (err != nil) != tc.err {
			t.Errorf("%s: %v, %v; want %v, error %v", tc.name, d, err, tc.want, tc.err)
		}
	}
	if err := Check(context.Background(), Chain{{"a", answer(DecisionNoOpinion, failed)}}, Attributes{}); !apierrors.IsInternalError(err) {
		t.Errorf("a failed authorizer: %v, want an internal error", err)
	}
}

var (
	podsResource         = &registry.Resource{GVK: schema.GroupVersionKind{Version: "v1", Kind: "Pod"}, Plural: "pods", Namespaced: true}
	nodesResource        = &registry.Resource{GVK: schema.GroupVersionKind{Version: "v1", Kind: "Node"}, Plural: "nodes"}
	tokenReviewsResource = &registry.Resource{GVK: schema.GroupVersionKind{Group: "authentication.k8s.io", Version: "v1", Kind: "TokenReview"}, Plural: "tokenreviews"}
	nodeUser             = request.User{Name: "system:node:n1", Groups: []string{NodesGroup}}
)

// TestForbiddenMessages: upstream's words, byte for byte.
func TestForbiddenMessages(t *testing.T) {
	u := request.User{Name: "jane"}
	cases := []struct {
		a    Attributes
		want string
	}{
		{Attributes{User: u, Verb: "get", Resource: podsResource, Namespace: "ns", Name: "p"},
			`pods "p" is forbidden: User "jane" cannot get resource "pods" in API group "" in the namespace "ns"`},
		{Attributes{User: u, Verb: "list", Resource: podsResource},
			`pods is forbidden: User "jane" cannot list resource "pods" in API group "" at the cluster scope`},
		{Attributes{User: u, Verb: "create", Resource: podsResource, Namespace: "ns", Name: "p", Subresource: "eviction"},
			`pods "p" is forbidden: User "jane" cannot create resource "pods/eviction" in API group "" in the namespace "ns"`},
		{Attributes{User: u, Verb: "delete", Path: "/metrics"}, `forbidden: User "jane" cannot delete path "/metrics"`},
		// Cluster-scoped resources are "at the cluster scope" too.
		{Attributes{User: u, Verb: "get", Resource: nodesResource, Name: "n1"},
			`nodes "n1" is forbidden: User "jane" cannot get resource "nodes" in API group "" at the cluster scope`},
		{Attributes{User: u, Verb: "list", Resource: nodesResource},
			`nodes is forbidden: User "jane" cannot list resource "nodes" in API group "" at the cluster scope`},
		{Attributes{User: u, Verb: "get", Resource: nodesResource, Name: "n1", Subresource: "proxy"},
			`nodes "n1" is forbidden: User "jane" cannot get resource "nodes/proxy" in API group "" at the cluster scope`},
		{Attributes{User: u, Verb: "create", Resource: tokenReviewsResource},
			`tokenreviews.authentication.k8s.io is forbidden: User "jane" cannot create resource "tokenreviews" in API group "authentication.k8s.io" at the cluster scope`},
	}
	for _, tc := range cases {
		err := Check(context.Background(), New(Data{}), tc.a)
		if !apierrors.IsForbidden(err) || err.Error() != tc.want {
			t.Errorf("got %v\nwant %s", err, tc.want)
		}
	}
}

// fakePods serves the node authorizer's reads from a slice.
type fakePods []*v1.Pod

func (f fakePods) GetPod(_ context.Context, ns, name string) (*v1.Pod, error) {
	for _, p := range f {
		if p.Namespace == ns && p.Name == name {
			return p, nil
		}
	}
	return nil, apierrors.NewNotFound(v1.Resource("pods"), name)
}

func (f fakePods) ListPods(_ context.Context, ns string) ([]*v1.Pod, error) {
	var out []*v1.Pod
	for _, p := range f {
		if p.Namespace == ns {
			out = append(out, p)
		}
	}
	return out, nil
}

func (f fakePods) FindPod(ctx context.Context, ns string, match func(*v1.Pod) bool) (bool, error) {
	pods, _ := f.ListPods(ctx, ns)
	return slices.ContainsFunc(pods, match), nil
}

// TestNodeAuthorizerAlone: the link on its own, without a server: what a
// node may read of its pods, and no opinion on other users and paths.
func TestNodeAuthorizerAlone(t *testing.T) {
	pods := fakePods{{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "mine"}, Spec: v1.PodSpec{NodeName: "n1",
		Volumes:          []v1.Volume{{Name: "s", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "used"}}}},
		ImagePullSecrets: []v1.LocalObjectReference{{Name: "pull"}},
		Containers:       []v1.Container{{Name: "c", EnvFrom: []v1.EnvFromSource{{ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "env"}}}}}}}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "theirs"}, Spec: v1.PodSpec{NodeName: "n2",
			ImagePullSecrets: []v1.LocalObjectReference{{Name: "their-pull"}}}}}
	secrets := &registry.Resource{GVK: schema.GroupVersionKind{Version: "v1", Kind: "Secret"}, Plural: "secrets", Namespaced: true}
	services := &registry.Resource{GVK: schema.GroupVersionKind{Version: "v1", Kind: "Service"}, Plural: "services", Namespaced: true}
	configMaps := &registry.Resource{GVK: schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, Plural: "configmaps", Namespaced: true}
	runtimeClasses := &registry.Resource{GVK: schema.GroupVersionKind{Group: "node.k8s.io", Version: "v1", Kind: "RuntimeClass"}, Plural: "runtimeclasses"}
	z := &NodeAuthorizer{Pods: pods}
	cases := []struct {
		a    Attributes
		want Decision
	}{
		{Attributes{User: nodeUser, Verb: "get", Resource: podsResource, Namespace: "ns", Name: "mine"}, DecisionAllow},
		{Attributes{User: nodeUser, Verb: "get", Resource: podsResource, Namespace: "ns", Name: "theirs"}, DecisionNoOpinion},
		{Attributes{User: nodeUser, Verb: "get", Resource: podsResource, Namespace: "ns", Name: "missing"}, DecisionAllow},
		{Attributes{User: nodeUser, Verb: "list", Resource: podsResource, FieldSelector: "spec.nodeName=n1"}, DecisionAllow},
		{Attributes{User: nodeUser, Verb: "list", Resource: podsResource, FieldSelector: "spec.nodeName=n2"}, DecisionNoOpinion},
		{Attributes{User: nodeUser, Verb: "get", Resource: secrets, Namespace: "ns", Name: "used"}, DecisionAllow},
		{Attributes{User: nodeUser, Verb: "get", Resource: secrets, Namespace: "ns", Name: "other"}, DecisionNoOpinion},
		// Image pull secrets are edges of upstream's node graph too.
		{Attributes{User: nodeUser, Verb: "get", Resource: secrets, Namespace: "ns", Name: "pull"}, DecisionAllow},
		{Attributes{User: nodeUser, Verb: "get", Resource: secrets, Namespace: "ns", Name: "their-pull"}, DecisionNoOpinion},
		// The watch-based managers list and watch one object by
		// metadata.name, as upstream's authorizeReadNamespacedObject lets
		// them; never a namespace's or the cluster's whole collection.
		{Attributes{User: nodeUser, Verb: "list", Resource: secrets, Namespace: "ns", FieldSelector: "metadata.name=used"}, DecisionAllow},
		{Attributes{User: nodeUser, Verb: "watch", Resource: secrets, Namespace: "ns", FieldSelector: "metadata.name=pull"}, DecisionAllow},
		{Attributes{User: nodeUser, Verb: "watch", Resource: configMaps, Namespace: "ns", FieldSelector: "metadata.name=env"}, DecisionAllow},
		{Attributes{User: nodeUser, Verb: "list", Resource: configMaps, Namespace: "ns", Name: "env"}, DecisionAllow},
		{Attributes{User: nodeUser, Verb: "list", Resource: secrets, Namespace: "ns", FieldSelector: "metadata.name=their-pull"}, DecisionNoOpinion},
		{Attributes{User: nodeUser, Verb: "list", Resource: secrets, Namespace: "ns"}, DecisionNoOpinion},
		{Attributes{User: nodeUser, Verb: "watch", Resource: secrets, Namespace: "ns"}, DecisionNoOpinion},
		{Attributes{User: nodeUser, Verb: "list", Resource: secrets}, DecisionNoOpinion},
		{Attributes{User: nodeUser, Verb: "list", Resource: secrets, FieldSelector: "metadata.name=used"}, DecisionNoOpinion},
		{Attributes{User: nodeUser, Verb: "list", Resource: secrets, Namespace: "ns", FieldSelector: "metadata.name!=used"}, DecisionNoOpinion},
		{Attributes{User: nodeUser, Verb: "list", Resource: configMaps, Namespace: "ns", FieldSelector: "type=x"}, DecisionNoOpinion},
		{Attributes{User: nodeUser, Verb: "list", Resource: configMaps, Namespace: "ns", FieldSelector: "metadata.name=.."}, DecisionNoOpinion},
		{Attributes{User: nodeUser, Verb: "update", Resource: configMaps, Namespace: "ns", Name: "env"}, DecisionNoOpinion},
		{Attributes{User: nodeUser, Verb: "delete", Resource: secrets, Namespace: "ns", Name: "used"}, DecisionNoOpinion},
		// The agent's service informer (the service environment
		// variables): every namespace's services, read only, as
		// upstream's system:node role.
		{Attributes{User: nodeUser, Verb: "list", Resource: services}, DecisionAllow},
		{Attributes{User: nodeUser, Verb: "watch", Resource: services}, DecisionAllow},
		{Attributes{User: nodeUser, Verb: "get", Resource: services, Namespace: "default", Name: "kubernetes"}, DecisionAllow},
		{Attributes{User: nodeUser, Verb: "create", Resource: services, Namespace: "ns"}, DecisionNoOpinion},
		{Attributes{User: nodeUser, Verb: "delete", Resource: services, Namespace: "ns", Name: "web"}, DecisionNoOpinion},
		// The agent resolves runtimeClassName to a handler: read only.
		{Attributes{User: nodeUser, Verb: "get", Resource: runtimeClasses, Name: "crun"}, DecisionAllow},
		{Attributes{User: nodeUser, Verb: "list", Resource: runtimeClasses}, DecisionAllow},
		{Attributes{User: nodeUser, Verb: "watch", Resource: runtimeClasses}, DecisionAllow},
		{Attributes{User: nodeUser, Verb: "create", Resource: runtimeClasses}, DecisionNoOpinion},
		{Attributes{User: nodeUser, Verb: "delete", Resource: runtimeClasses, Name: "crun"}, DecisionNoOpinion},
		{Attributes{User: nodeUser, Verb: "get", Path: "/metrics"}, DecisionNoOpinion},
		{Attributes{User: request.User{Name: "system:node:n1"}, Verb: "get", Resource: podsResource, Namespace: "ns", Name: "mine"}, DecisionNoOpinion},
	}
	for _, tc := range cases {
		if d, _, _ := z.Authorize(context.Background(), tc.a); d != tc.want {
			t.Errorf("%+v: %v, want %v", tc.a, d, tc.want)
		}
	}
}
