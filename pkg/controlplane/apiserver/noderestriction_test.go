package apiserver

import (
	"fmt"
	"net/http"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodeagent/nodeagent/pkg/controlplane/apiserver/request"
)

func nodeUser(name string) request.User {
	return request.User{Name: "system:node:" + name, Groups: []string{"system:nodes", "system:authenticated"}}
}

// adminNode creates a Node as the admin and returns its UID.
func adminNode(t *testing.T, name string) string {
	t.Helper()
	n, err := client.CoreV1().Nodes().Create(ctxT(t), &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.CoreV1().Nodes().Delete(ctxT(t), name, metav1.DeleteOptions{}) })
	return string(n.UID)
}

// boundPod creates, as the admin, a pod bound to node.
func boundPod(t *testing.T, ns, name, node string) {
	t.Helper()
	p := testPod(name)
	p.Spec.NodeName = node
	if _, err := client.CoreV1().Pods(ns).Create(ctxT(t), p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

type restrictionCase struct {
	name         string
	method, path string
	body         string
	wantCode     int
	wantMessage  string
}

func runRestrictionCases(t *testing.T, u request.User, cases []restrictionCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rec := serveAs(t, u, tc.method, tc.path, tc.body)
			if rec.Code != tc.wantCode {
				t.Fatalf("%s %s: %d %s, want %d", tc.method, tc.path, rec.Code, rec.Body, tc.wantCode)
			}
			if tc.wantMessage != "" {
				if got := statusMessage(t, rec); got != tc.wantMessage {
					t.Errorf("message:\n got %s\nwant %s", got, tc.wantMessage)
				}
			}
		})
	}
}

func mirrorPod(name, node, ownerUID, extraSpec string) string {
	return fmt.Sprintf(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":%q,"annotations":{"kubernetes.io/config.mirror":"h"},
		"ownerReferences":[{"apiVersion":"v1","kind":"Node","name":%q,"uid":%q,"controller":true}]},
		"spec":{"nodeName":%q,%s"containers":[{"name":"c","image":"busybox:1"}]}}`, name, node, ownerUID, node, extraSpec)
}

func TestNodeRestrictionPods(t *testing.T) {
	ns := testNamespace(t)
	uid := adminNode(t, "nr-pods-a")
	adminNode(t, "nr-pods-b")
	boundPod(t, ns, "mine", "nr-pods-a")
	boundPod(t, ns, "theirs", "nr-pods-b")
	pods := "/api/v1/namespaces/" + ns + "/pods"
	const node = `node "nr-pods-a"`
	runRestrictionCases(t, nodeUser("nr-pods-a"), []restrictionCase{
		{"plain pod", http.MethodPost, pods, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"nodeName":"nr-pods-a","containers":[{"name":"c","image":"busybox:1"}]}}`,
			http.StatusForbidden, `pods "p" is forbidden: pod does not have "kubernetes.io/config.mirror" annotation, ` + node + ` can only create mirror pods`},
		{"mirror pod for another node", http.MethodPost, pods, mirrorPod("m", "nr-pods-b", uid, ""),
			http.StatusForbidden, `pods "m" is forbidden: ` + node + ` can only create pods with spec.nodeName set to itself`},
		{"mirror pod with a wrong owner UID", http.MethodPost, pods, mirrorPod("m", "nr-pods-a", "0000", ""),
			http.StatusForbidden, `pods "m" is forbidden: node nr-pods-a UID mismatch: expected 0000 got ` + uid},
		{"mirror pod with a service account", http.MethodPost, pods, mirrorPod("m", "nr-pods-a", uid, `"serviceAccountName":"default",`),
			http.StatusForbidden, `pods "m" is forbidden: a mirror pod may not reference service accounts`}, // ServiceAccount runs first
		{"mirror pod with a secret", http.MethodPost, pods, mirrorPod("m", "nr-pods-a", uid, `"volumes":[{"name":"s","secret":{"secretName":"s"}}],`),
			http.StatusForbidden, `pods "m" is forbidden: a mirror pod may not reference secrets`},
		{"mirror pod with a config map", http.MethodPost, pods, mirrorPod("m", "nr-pods-a", uid, `"volumes":[{"name":"s","configMap":{"name":"s"}}],`),
			http.StatusForbidden, `pods "m" is forbidden: ` + node + ` can not create pods that reference configmaps`},
		{"mirror pod", http.MethodPost, pods, mirrorPod("m", "nr-pods-a", uid, ""), http.StatusCreated, ""},
		{"update a pod", http.MethodPatch, pods + "/mine", `{"metadata":{"labels":{"x":"y"}}}`, http.StatusForbidden, ""},
		{"status of another node's pod", http.MethodPatch, pods + "/theirs/status", `{"status":{"phase":"Running"}}`,
			http.StatusForbidden, `pods "theirs" is forbidden: ` + node + ` can only update pod status for pods with spec.nodeName set to itself`},
		{"labels through status", http.MethodPatch, pods + "/mine/status", `{"metadata":{"labels":{"x":"y"}}}`,
			http.StatusForbidden, `pods "mine" is forbidden: ` + node + ` cannot update labels through pod status`},
		{"status of its pod", http.MethodPatch, pods + "/mine/status", `{"status":{"phase":"Running"}}`, http.StatusOK, ""},
		{"evict another node's pod", http.MethodPost, pods + "/theirs/eviction", `{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"theirs"}}`,
			http.StatusForbidden, `pods "theirs" is forbidden: node nr-pods-a can only evict pods with spec.nodeName set to itself`},
		{"delete another node's pod", http.MethodDelete, pods + "/theirs", "",
			http.StatusForbidden, `pods "Unknown" is forbidden: ` + node + ` can only delete pods with spec.nodeName set to itself`},
		{"delete its pod", http.MethodDelete, pods + "/mine?gracePeriodSeconds=0", "", http.StatusOK, ""},
	})
	// The server's ServiceAccount admission leaves mirror pods alone.
	m, err := client.CoreV1().Pods(ns).Get(ctxT(t), "m", metav1.GetOptions{})
	if err != nil || m.Spec.ServiceAccountName != "" {
		t.Errorf("mirror pod: %v, service account %q", err, m.Spec.ServiceAccountName)
	}
}

func TestNodeRestrictionNodes(t *testing.T) {
	adminNode(t, "nr-nodes-b")
	t.Cleanup(func() {
		for _, n := range []string{"nr-nodes-a", "nr-nodes-c"} {
			_ = client.CoreV1().Nodes().Delete(ctxT(t), n, metav1.DeleteOptions{})
		}
	})
	const nodes = "/api/v1/nodes"
	node := func(name, labels string) string {
		return fmt.Sprintf(`{"apiVersion":"v1","kind":"Node","metadata":{"name":%q,"labels":{%s}}}`, name, labels)
	}
	runRestrictionCases(t, nodeUser("nr-nodes-a"), []restrictionCase{
		{"register another node", http.MethodPost, nodes, node("nr-nodes-c", ""),
			http.StatusForbidden, `nodes "nr-nodes-c" is forbidden: node "nr-nodes-a" is not allowed to modify node "nr-nodes-c"`},
		{"register with reserved labels", http.MethodPost, nodes, node("nr-nodes-a", `"node-restriction.kubernetes.io/x":"1","kubernetes.io/x":"1","example.com/x":"1"`),
			http.StatusForbidden, `nodes "nr-nodes-a" is forbidden: node "nr-nodes-a" is not allowed to set the following labels: kubernetes.io/x, node-restriction.kubernetes.io/x`},
		{"register", http.MethodPost, nodes, node("nr-nodes-a", `"kubernetes.io/hostname":"a","kubernetes.io/os":"linux","node.kubernetes.io/role":"w","topology.kubernetes.io/zone":"z"`),
			http.StatusCreated, ""},
		{"node-restriction label", http.MethodPatch, nodes + "/nr-nodes-a", `{"metadata":{"labels":{"node-restriction.kubernetes.io/x":"1"}}}`,
			http.StatusForbidden, `nodes "nr-nodes-a" is forbidden: is not allowed to modify labels: node-restriction.kubernetes.io/x`},
		{"remove a kubelet label", http.MethodPatch, nodes + "/nr-nodes-a", `{"metadata":{"labels":{"kubernetes.io/os":null}}}`, http.StatusOK, ""},
		{"other labels", http.MethodPatch, nodes + "/nr-nodes-a", `{"metadata":{"labels":{"example.com/x":"1","kubelet.kubernetes.io/y":"2"}}}`, http.StatusOK, ""},
		{"taints", http.MethodPatch, nodes + "/nr-nodes-a", `{"spec":{"taints":[{"key":"k","effect":"NoSchedule"}]}}`,
			http.StatusForbidden, `nodes "nr-nodes-a" is forbidden: node "nr-nodes-a" is not allowed to modify taints`},
		{"owner references", http.MethodPatch, nodes + "/nr-nodes-a", `{"metadata":{"ownerReferences":[{"apiVersion":"v1","kind":"Node","name":"x","uid":"1"}]}}`,
			http.StatusForbidden, `nodes "nr-nodes-a" is forbidden: node "nr-nodes-a" is not allowed to modify ownerReferences`},
		{"its status", http.MethodPatch, nodes + "/nr-nodes-a/status", `{"status":{"phase":"Running"}}`, http.StatusOK, ""},
		{"another node", http.MethodPatch, nodes + "/nr-nodes-b", `{"metadata":{"labels":{"x":"1"}}}`,
			http.StatusForbidden, `nodes "nr-nodes-b" is forbidden: node "nr-nodes-a" is not allowed to modify node "nr-nodes-b"`},
		{"another node's status", http.MethodPatch, nodes + "/nr-nodes-b/status", `{"status":{"phase":"Running"}}`,
			http.StatusForbidden, `nodes "nr-nodes-b" is forbidden: node "nr-nodes-a" is not allowed to modify node "nr-nodes-b"`},
	})
}

// Only the node IPAM controller (the admin here) gives a node its pod
// CIDRs: kubenet routes them to the node, so a node choosing its own could
// draw other traffic to itself. Beyond upstream, which lets a node set
// them when it registers.
func TestNodeRestrictionPodCIDR(t *testing.T) {
	const name, nodes = "nr-cidr-a", "/api/v1/nodes"
	t.Cleanup(func() { _ = client.CoreV1().Nodes().Delete(ctxT(t), name, metav1.DeleteOptions{}) })
	node := func(spec string) string {
		return fmt.Sprintf(`{"apiVersion":"v1","kind":"Node","metadata":{"name":%q},"spec":{%s}}`, name, spec)
	}
	const (
		set    = `nodes "nr-cidr-a" is forbidden: node "nr-cidr-a" is not allowed to set podCIDR`
		modify = `nodes "nr-cidr-a" is forbidden: node "nr-cidr-a" is not allowed to modify podCIDR`
	)
	runRestrictionCases(t, nodeUser(name), []restrictionCase{
		{"register with pod CIDRs", http.MethodPost, nodes, node(`"podCIDR":"10.99.0.1/32","podCIDRs":["10.99.0.1/32"]`), http.StatusForbidden, set},
		{"register with the legacy podCIDR only", http.MethodPost, nodes, node(`"podCIDR":"0.0.0.0/1"`), http.StatusForbidden, set},
		{"register", http.MethodPost, nodes, node(""), http.StatusCreated, ""},
		{"take a pod CIDR", http.MethodPatch, nodes + "/" + name, `{"spec":{"podCIDR":"10.244.9.0/24","podCIDRs":["10.244.9.0/24"]}}`, http.StatusForbidden, modify},
		{"take the legacy podCIDR only", http.MethodPatch, nodes + "/" + name, `{"spec":{"podCIDR":"0.0.0.0/1"}}`, http.StatusForbidden, modify},
	})
	if _, err := client.CoreV1().Nodes().Patch(ctxT(t), name, types.StrategicMergePatchType,
		[]byte(`{"spec":{"podCIDR":"10.244.9.0/24","podCIDRs":["10.244.9.0/24"]}}`), metav1.PatchOptions{}); err != nil {
		t.Fatalf("the IPAM controller's assignment: %v", err)
	}
	runRestrictionCases(t, nodeUser(name), []restrictionCase{
		{"labels, pod CIDR kept", http.MethodPatch, nodes + "/" + name, `{"metadata":{"labels":{"example.com/x":"1"}}}`, http.StatusOK, ""},
		{"its status", http.MethodPatch, nodes + "/" + name + "/status", `{"status":{"phase":"Running"}}`, http.StatusOK, ""},
		{"change its pod CIDR", http.MethodPatch, nodes + "/" + name, `{"spec":{"podCIDR":"10.244.10.0/24","podCIDRs":["10.244.10.0/24"]}}`, http.StatusForbidden, modify},
		{"widen the legacy podCIDR", http.MethodPatch, nodes + "/" + name, `{"spec":{"podCIDR":"0.0.0.0/1"}}`, http.StatusForbidden, modify},
		{"clear its pod CIDR", http.MethodPatch, nodes + "/" + name, `{"spec":{"podCIDR":null,"podCIDRs":null}}`, http.StatusForbidden, modify},
	})
}

func TestNodeRestrictionLeases(t *testing.T) {
	lease := func(name string) string {
		return fmt.Sprintf(`{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":%q}}`, name)
	}
	const leases = "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases"
	runRestrictionCases(t, nodeUser("nr-lease-a"), []restrictionCase{
		{"another node's lease", http.MethodPost, leases, lease("nr-lease-b"),
			http.StatusForbidden, `leases.coordination.k8s.io "nr-lease-b" is forbidden: can only access node lease with the same name as the requesting node`},
		// refused by the node authorizer before admission, as upstream
		{"a lease elsewhere", http.MethodPost, "/apis/coordination.k8s.io/v1/namespaces/default/leases", lease("nr-lease-a"),
			http.StatusForbidden, `leases.coordination.k8s.io is forbidden: User "system:node:nr-lease-a" cannot create resource "leases" in API group "coordination.k8s.io" in the namespace "default": can only access leases in the "kube-node-lease" system namespace`},
		{"its lease", http.MethodPost, leases, lease("nr-lease-a"), http.StatusCreated, ""},
		{"renew", http.MethodPatch, leases + "/nr-lease-a", `{"spec":{"holderIdentity":"nr-lease-a"}}`, http.StatusOK, ""},
		{"delete", http.MethodDelete, leases + "/nr-lease-a", "", http.StatusOK, ""},
	})
}
