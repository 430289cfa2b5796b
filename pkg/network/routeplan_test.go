package network

import (
	"net"
	"reflect"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func node(name string, podCIDRs []string, ips ...string) *v1.Node {
	n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1.NodeSpec{PodCIDRs: podCIDRs}}
	if len(podCIDRs) > 0 {
		n.Spec.PodCIDR = podCIDRs[0]
	}
	for _, ip := range ips {
		n.Status.Addresses = append(n.Status.Addresses, v1.NodeAddress{Type: v1.NodeInternalIP, Address: ip})
	}
	return n
}

func route(dst, gw, node string) NodeRoute {
	_, n, err := net.ParseCIDR(dst)
	if err != nil {
		panic(err)
	}
	ip := net.ParseIP(gw)
	if ip4 := ip.To4(); ip4 != nil {
		ip = ip4
	}
	return NodeRoute{Dst: n, Gw: ip, Node: node}
}

func routeStrings(rs []NodeRoute) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.String())
	}
	return out
}

func TestPlanRoutes(t *testing.T) {
	deleting := node("d", []string{"10.244.9.0/24"}, "192.168.0.9")
	now := metav1.Now()
	deleting.DeletionTimestamp = &now
	legacy := node("l", nil, "192.168.0.7") // a server that sets only spec.podCIDR
	legacy.Spec.PodCIDR = "10.244.7.0/24"
	external := node("e", []string{"10.244.8.0/24"})
	external.Status.Addresses = []v1.NodeAddress{{Type: v1.NodeExternalIP, Address: "203.0.113.8"}}
	created := func(n *v1.Node, minute int) *v1.Node {
		n.CreationTimestamp = metav1.NewTime(time.Date(2025, 1, 1, 0, minute, 0, 0, time.UTC))
		return n
	}
	_, clusterCIDR, _ := net.ParseCIDR("10.244.0.0/16")
	inCluster := RoutePolicy{ClusterCIDRs: []*net.IPNet{clusterCIDR}}

	tests := []struct {
		name    string
		policy  RoutePolicy
		nodes   []*v1.Node
		want    []string
		refused []string
	}{{
		name:  "nothing but self",
		nodes: []*v1.Node{node("a", []string{"10.244.0.0/24"}, "192.168.0.1")},
	}, {
		name: "one route per other node, sorted by node",
		nodes: []*v1.Node{
			node("c", []string{"10.244.2.0/24"}, "192.168.0.3"),
			node("a", []string{"10.244.0.0/24"}, "192.168.0.1"),
			nil,
			node("b", []string{"10.244.1.0/24"}, "192.168.0.2"),
		},
		want: []string{"10.244.1.0/24 via 192.168.0.2 (node b)", "10.244.2.0/24 via 192.168.0.3 (node c)"},
	}, {
		name: "dual stack: each CIDR via the address of its family",
		nodes: []*v1.Node{
			node("b", []string{"fd00:1::/64", "10.244.1.0/24"}, "192.168.0.2", "fd99::2"),
		},
		want: []string{"10.244.1.0/24 via 192.168.0.2 (node b)", "fd00:1::/64 via fd99::2 (node b)"},
	}, {
		name: "no address of the CIDR's family",
		nodes: []*v1.Node{
			node("b", []string{"10.244.1.0/24", "fd00:1::/64"}, "192.168.0.2"),
			node("c", []string{"10.244.2.0/24"}, "fd99::3"),
		},
		want: []string{"10.244.1.0/24 via 192.168.0.2 (node b)"},
	}, {
		name: "skipped: deleting, no CIDR, no InternalIP, bad CIDR; legacy podCIDR used",
		nodes: []*v1.Node{
			deleting, legacy, external,
			node("n", nil, "192.168.0.5"),
			node("x", []string{"10.244.300.0/24"}, "192.168.0.6"),
		},
		want:    []string{"10.244.7.0/24 via 192.168.0.7 (node l)"},
		refused: []string{"10.244.300.0/24 of node x: not a CIDR"},
	}, {
		name: "conflicts: a CIDR claimed twice goes to the first node by name; self's CIDR is never routed away",
		nodes: []*v1.Node{
			node("a", []string{"10.244.0.0/24"}, "192.168.0.1"),
			node("z", []string{"10.244.1.0/24"}, "192.168.0.26"),
			node("b", []string{"10.244.1.0/24"}, "192.168.0.2"),
			node("c", []string{"10.244.0.0/23"}, "192.168.0.3"),
		},
		want: []string{"10.244.1.0/24 via 192.168.0.2 (node b)"},
		refused: []string{
			"10.244.0.0/23 of node c: overlaps this node's pod CIDR 10.244.0.0/24",
			"10.244.1.0/24 of node z: overlaps pod CIDR 10.244.1.0/24 of node b",
		},
	}, {
		name: "conflicts: the older node keeps its range, also against a later one sorted before it or cutting into it",
		nodes: []*v1.Node{
			created(node("b", []string{"10.244.1.0/24"}, "192.168.0.2"), 1),
			created(node("aa", []string{"10.244.1.0/24"}, "192.168.0.3"), 2),
			created(node("ab", []string{"10.244.1.128/25"}, "192.168.0.4"), 3),
		},
		want: []string{"10.244.1.0/24 via 192.168.0.2 (node b)"},
		refused: []string{
			"10.244.1.0/24 of node aa: overlaps pod CIDR 10.244.1.0/24 of node b",
			"10.244.1.128/25 of node ab: overlaps pod CIDR 10.244.1.0/24 of node b",
		},
	}, {
		name:   "cluster CIDR known: claims outside it, or of a prefix out of bounds, are refused",
		policy: inCluster,
		nodes: []*v1.Node{
			node("a", []string{"10.244.0.0/24"}, "192.168.0.1"),
			node("b", []string{"10.244.1.0/24", "fd00:1::/64"}, "192.168.0.2", "fd99::2"), // IPv6 has no cluster CIDR here
			node("h1", []string{"10.99.0.1/32"}, "192.168.0.11"),
			node("h2", []string{"0.0.0.0/1"}, "192.168.0.12"),
			node("h3", []string{"10.96.0.0/24"}, "192.168.0.13"),
			node("h4", []string{"10.0.0.0/8"}, "192.168.0.14"),
			node("h5", []string{"10.244.0.0/16"}, "192.168.0.15"),
		},
		want: []string{"10.244.1.0/24 via 192.168.0.2 (node b)", "fd00:1::/64 via fd99::2 (node b)"},
		refused: []string{
			"10.99.0.1/32 of node h1: prefix /32 is longer than /30",
			"0.0.0.0/1 of node h2: prefix /1 is shorter than /8",
			"10.96.0.0/24 of node h3: outside the cluster CIDR 10.244.0.0/16",
			"10.0.0.0/8 of node h4: outside the cluster CIDR 10.244.0.0/16",
			"10.244.0.0/16 of node h5: overlaps this node's pod CIDR 10.244.0.0/24",
		},
	}, {
		name: "cluster CIDR unknown: prefix bounds, and no CIDR holding a node's address",
		nodes: []*v1.Node{
			node("a", []string{"10.244.0.0/24"}, "192.168.0.1"),
			node("b", []string{"10.99.0.0/30", "fd00:1::/64"}, "192.168.0.2", "fd99::2"),
			node("c", []string{"10.99.1.0/31", "fd00::/16"}, "192.168.0.3", "fd99::3"),
			node("d", []string{"fd00:2::/127"}, "fd99::4"),
			node("h1", []string{"192.168.0.0/24"}, "10.1.0.1"),
			node("h2", []string{"203.0.113.0/24"}, "192.168.0.12"),
			node("h3", []string{"fd99::/64"}, "fd99::13"),
			external,
		},
		want: []string{"10.99.0.0/30 via 192.168.0.2 (node b)", "fd00:1::/64 via fd99::2 (node b)"},
		refused: []string{
			"10.99.1.0/31 of node c: prefix /31 is longer than /30",
			"fd00::/16 of node c: prefix /16 is shorter than /32",
			"fd00:2::/127 of node d: prefix /127 is longer than /126",
			"192.168.0.0/24 of node h1: holds the address 192.168.0.1 of node a",
			"203.0.113.0/24 of node h2: holds the address 203.0.113.8 of node e",
			"fd99::/64 of node h3: holds the address fd99::2 of node b",
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			plan, refused := PlanRoutes("a", tt.nodes, tt.policy)
			if got := routeStrings(plan); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("PlanRoutes = %q\nwant %q", got, tt.want)
			}
			var gotRefused []string
			for _, r := range refused {
				gotRefused = append(gotRefused, r.String())
			}
			if !reflect.DeepEqual(gotRefused, tt.refused) {
				t.Errorf("refused = %q\nwant %q", gotRefused, tt.refused)
			}
		})
	}
}

func TestPlanRoutesDoesNotReorderInput(t *testing.T) {
	nodes := []*v1.Node{node("b", nil), node("a", nil)}
	PlanRoutes("a", nodes, RoutePolicy{})
	if nodes[0].Name != "b" {
		t.Error("PlanRoutes sorted the caller's slice")
	}
}

func TestDiffRoutes(t *testing.T) {
	b := route("10.244.1.0/24", "192.168.0.2", "b")
	c := route("10.244.2.0/24", "192.168.0.3", "c")
	b6 := route("fd00:1::/64", "fd99::2", "b")
	bMoved := route("10.244.1.0/24", "192.168.0.22", "b")
	kernel := func(r NodeRoute) NodeRoute { r.Node = ""; return r } // routes read back carry no node
	tests := []struct {
		name             string
		wanted, present  []NodeRoute
		wantAdd, wantDel []string
	}{
		{name: "nothing"},
		{name: "all new", wanted: []NodeRoute{b, c, b6},
			wantAdd: []string{b.String(), c.String(), b6.String()}},
		{name: "in place", wanted: []NodeRoute{b, c, b6}, present: []NodeRoute{kernel(b6), kernel(c), kernel(b)}},
		{name: "stale", wanted: []NodeRoute{b}, present: []NodeRoute{kernel(b), kernel(c), kernel(b6)},
			wantDel: []string{kernel(c).String(), kernel(b6).String()}},
		{name: "gateway changed", wanted: []NodeRoute{bMoved, c}, present: []NodeRoute{kernel(b), kernel(c)},
			wantAdd: []string{bMoved.String()}, wantDel: []string{kernel(b).String()}},
		{name: "none wanted", present: []NodeRoute{kernel(b)}, wantDel: []string{kernel(b).String()}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			add, del := DiffRoutes(tt.wanted, tt.present)
			if got := routeStrings(add); !reflect.DeepEqual(got, tt.wantAdd) {
				t.Errorf("add = %q, want %q", got, tt.wantAdd)
			}
			if got := routeStrings(del); !reflect.DeepEqual(got, tt.wantDel) {
				t.Errorf("del = %q, want %q", got, tt.wantDel)
			}
		})
	}
}

func TestDiffRoutesMatchesIPv4InEitherForm(t *testing.T) {
	wanted := route("10.244.1.0/24", "192.168.0.2", "b")
	present := wanted
	present.Gw = net.ParseIP("192.168.0.2") // 16-byte form
	if add, del := DiffRoutes([]NodeRoute{wanted}, []NodeRoute{present}); add != nil || del != nil {
		t.Errorf("add, del = %v, %v; want nothing", add, del)
	}
}
