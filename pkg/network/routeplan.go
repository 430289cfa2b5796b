package network

import (
	"cmp"
	"fmt"
	"net"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// NodeRoute is a host-gw route: another node's pod CIDR via that node's
// address.
type NodeRoute struct {
	Dst  *net.IPNet // the other node's pod CIDR
	Gw   net.IP     // the other node's InternalIP of Dst's family
	Node string     // the other node; empty for routes read from the kernel
}

func (r NodeRoute) String() string {
	if r.Node == "" {
		return fmt.Sprintf("%s via %s", r.Dst, r.Gw)
	}
	return fmt.Sprintf("%s via %s (node %s)", r.Dst, r.Gw, r.Node)
}

// The prefix lengths PlanRoutes accepts for another node's pod CIDR. A
// longer prefix (a /32 to one address, a /31) serves no pods and is the
// shape of a claim on one host's traffic; a shorter one (0.0.0.0/1) of a
// claim on everybody's. The IPv6 bounds are the IPv4 ones in spirit: /126
// holds a gateway and a few pods, and no node needs more than a /32.
const (
	minPodCIDRPrefix4, maxPodCIDRPrefix4 = 8, 30
	minPodCIDRPrefix6, maxPodCIDRPrefix6 = 32, 126
)

// RoutePolicy bounds what PlanRoutes believes of the other nodes' pod
// CIDRs: a node that sets its own spec.podCIDRs (upstream API servers let
// a kubelet do so when it registers) must not route other traffic to
// itself.
type RoutePolicy struct {
	// ClusterCIDRs are the pods' ranges, when known: a pod CIDR of a
	// family that has one must lie inside one of them. A family without
	// one gets only the other checks.
	ClusterCIDRs []*net.IPNet
}

// RefusedCIDR is another node's pod CIDR that PlanRoutes routes nowhere,
// and why.
type RefusedCIDR struct {
	Node, CIDR, Reason string
}

func (r RefusedCIDR) String() string {
	return fmt.Sprintf("%s of node %s: %s", r.CIDR, r.Node, r.Reason)
}

// PlanRoutes is the host-gw routes node self wants: for every other node
// with pod CIDRs, a route to each CIDR via that node's InternalIP of the
// same family. Nodes being deleted and CIDRs without an address of their
// family are left out. Refused, with the reason, are CIDRs that do not
// parse, that policy refuses (checkPodCIDR), that overlap self's, or that
// overlap one already planned: claims are taken oldest node first (then
// by name), so a node registered later cannot take over, or cut into, the
// range of one that holds it. The plan is sorted by node, then
// destination; refused by node, then CIDR.
func PlanRoutes(self string, nodes []*v1.Node, policy RoutePolicy) (plan []NodeRoute, refused []RefusedCIDR) {
	sorted := slices.DeleteFunc(slices.Clone(nodes), func(n *v1.Node) bool { return n == nil })
	slices.SortFunc(sorted, func(a, b *v1.Node) int {
		return cmp.Or(a.CreationTimestamp.Time.Compare(b.CreationTimestamp.Time), cmp.Compare(a.Name, b.Name))
	})
	var own []*net.IPNet
	var addrs []nodeAddress
	for _, n := range sorted {
		if n.Name == self {
			own = nodePodCIDRs(n)
		}
		addrs = append(addrs, nodeAddresses(n)...)
	}
	refuse := func(n *v1.Node, cidr, format string, args ...any) {
		refused = append(refused, RefusedCIDR{Node: n.Name, CIDR: cidr, Reason: fmt.Sprintf(format, args...)})
	}
	for _, n := range sorted {
		if n.Name == self || n.DeletionTimestamp != nil {
			continue
		}
		for _, s := range podCIDRs(n) {
			_, dst, err := net.ParseCIDR(s)
			if err != nil {
				refuse(n, s, "not a CIDR")
				continue
			}
			if reason := policy.checkPodCIDR(dst, addrs); reason != "" {
				refuse(n, dst.String(), "%s", reason)
				continue
			}
			if o := overlapping(dst, own); o != nil {
				refuse(n, dst.String(), "overlaps this node's pod CIDR %s", o)
				continue
			}
			gw := internalIP(n, dst.IP.To4() != nil)
			if gw == nil {
				continue
			}
			if i := slices.IndexFunc(plan, func(r NodeRoute) bool { return overlaps(dst, r.Dst) }); i >= 0 {
				refuse(n, dst.String(), "overlaps pod CIDR %s of node %s", plan[i].Dst, plan[i].Node)
				continue
			}
			plan = append(plan, NodeRoute{Dst: dst, Gw: gw, Node: n.Name})
		}
	}
	slices.SortStableFunc(plan, func(a, b NodeRoute) int {
		return cmp.Or(cmp.Compare(a.Node, b.Node), cmp.Compare(a.Dst.String(), b.Dst.String()))
	})
	slices.SortStableFunc(refused, func(a, b RefusedCIDR) int {
		return cmp.Or(cmp.Compare(a.Node, b.Node), cmp.Compare(a.CIDR, b.CIDR))
	})
	return plan, refused
}

// checkPodCIDR says why another node's pod CIDR may not be routed to it,
// "" if it may: a prefix out of bounds, outside the cluster CIDR of its
// family, or holding a node's address.
func (p RoutePolicy) checkPodCIDR(dst *net.IPNet, addrs []nodeAddress) string {
	ones, bits := dst.Mask.Size()
	lo, hi := minPodCIDRPrefix4, maxPodCIDRPrefix4
	if bits == 128 {
		lo, hi = minPodCIDRPrefix6, maxPodCIDRPrefix6
	}
	switch {
	case ones > hi:
		return fmt.Sprintf("prefix /%d is longer than /%d", ones, hi)
	case ones < lo:
		return fmt.Sprintf("prefix /%d is shorter than /%d", ones, lo)
	}
	var family []*net.IPNet
	for _, c := range p.ClusterCIDRs {
		if _, cbits := c.Mask.Size(); cbits == bits {
			family = append(family, c)
		}
	}
	if len(family) > 0 && !slices.ContainsFunc(family, func(c *net.IPNet) bool { return contains(c, dst) }) {
		return fmt.Sprintf("outside the cluster CIDR %s", joinNets(family))
	}
	for _, a := range addrs {
		if dst.Contains(a.ip) {
			return fmt.Sprintf("holds the address %s of node %s", a.ip, a.node)
		}
	}
	return ""
}

// DiffRoutes compares the routes wanted with the routes present (ours
// only): add are the wanted routes missing or with another gateway, del
// the present routes no wanted route matches. Routes match on destination
// and gateway.
func DiffRoutes(wanted, present []NodeRoute) (add, del []NodeRoute) {
	key := func(r NodeRoute) string { return r.Dst.String() + " via " + r.Gw.String() }
	have := map[string]bool{}
	for _, p := range present {
		have[key(p)] = true
	}
	want := map[string]bool{}
	for _, w := range wanted {
		want[key(w)] = true
		if !have[key(w)] {
			add = append(add, w)
		}
	}
	for _, p := range present {
		if !want[key(p)] {
			del = append(del, p)
		}
	}
	return add, del
}

// podCIDRs are spec.podCIDRs, or spec.podCIDR from servers that set only
// that.
func podCIDRs(n *v1.Node) []string {
	if len(n.Spec.PodCIDRs) == 0 && n.Spec.PodCIDR != "" {
		return []string{n.Spec.PodCIDR}
	}
	return n.Spec.PodCIDRs
}

// nodePodCIDRs are podCIDRs parsed; unparsable entries are dropped.
func nodePodCIDRs(n *v1.Node) []*net.IPNet {
	var out []*net.IPNet
	for _, s := range podCIDRs(n) {
		if _, ipn, err := net.ParseCIDR(s); err == nil {
			out = append(out, ipn)
		}
	}
	return out
}

// nodeAddress is an address of a node, for checkPodCIDR.
type nodeAddress struct {
	ip   net.IP
	node string
}

// nodeAddresses are the node's InternalIPs and ExternalIPs.
func nodeAddresses(n *v1.Node) []nodeAddress {
	var out []nodeAddress
	for _, a := range n.Status.Addresses {
		if a.Type != v1.NodeInternalIP && a.Type != v1.NodeExternalIP {
			continue
		}
		if ip := net.ParseIP(a.Address); ip != nil {
			out = append(out, nodeAddress{ip: ip, node: n.Name})
		}
	}
	return out
}

// internalIP is the node's first InternalIP of the family.
func internalIP(n *v1.Node, v4 bool) net.IP {
	for _, a := range n.Status.Addresses {
		if a.Type != v1.NodeInternalIP {
			continue
		}
		ip := net.ParseIP(a.Address)
		if ip == nil || (ip.To4() != nil) != v4 {
			continue
		}
		if v4 {
			return ip.To4()
		}
		return ip
	}
	return nil
}

// overlapping is the first of others that shares addresses with n, nil if
// none does.
func overlapping(n *net.IPNet, others []*net.IPNet) *net.IPNet {
	for _, o := range others {
		if overlaps(n, o) {
			return o
		}
	}
	return nil
}

// overlaps: a and b share addresses (one holds the other's first).
func overlaps(a, b *net.IPNet) bool { return a.Contains(b.IP) || b.Contains(a.IP) }

// contains: outer holds all of inner (both of one family).
func contains(outer, inner *net.IPNet) bool {
	o, _ := outer.Mask.Size()
	i, _ := inner.Mask.Size()
	return o <= i && outer.Contains(inner.IP)
}

func joinNets(ns []*net.IPNet) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = n.String()
	}
	return strings.Join(s, ", ")
}
