package network

import (
	"cmp"
	"fmt"
	"net"
	"slices"

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

// PlanRoutes is the host-gw routes node self wants: for every other node
// with pod CIDRs, a route to each CIDR via that node's InternalIP of the
// same family. Nodes being deleted, CIDRs without an address of their
// family, unparsable CIDRs and CIDRs overlapping self's are left out; when
// two nodes claim the same CIDR the first by name wins. Sorted by node,
// then destination.
func PlanRoutes(self string, nodes []*v1.Node) []NodeRoute {
	sorted := slices.DeleteFunc(slices.Clone(nodes), func(n *v1.Node) bool { return n == nil })
	slices.SortFunc(sorted, func(a, b *v1.Node) int { return cmp.Compare(a.Name, b.Name) })
	var own []*net.IPNet
	for _, n := range sorted {
		if n.Name == self {
			own = nodePodCIDRs(n)
		}
	}
	var plan []NodeRoute
	taken := map[string]bool{}
	for _, n := range sorted {
		if n.Name == self || n.DeletionTimestamp != nil {
			continue
		}
		for _, dst := range nodePodCIDRs(n) {
			gw := internalIP(n, dst.IP.To4() != nil)
			if gw == nil || taken[dst.String()] || overlapsAny(dst, own) {
				continue
			}
			taken[dst.String()] = true
			plan = append(plan, NodeRoute{Dst: dst, Gw: gw, Node: n.Name})
		}
	}
	slices.SortStableFunc(plan, func(a, b NodeRoute) int {
		return cmp.Or(cmp.Compare(a.Node, b.Node), cmp.Compare(a.Dst.String(), b.Dst.String()))
	})
	return plan
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

// nodePodCIDRs are spec.podCIDRs, or spec.podCIDR from servers that set
// only that; unparsable entries are dropped.
func nodePodCIDRs(n *v1.Node) []*net.IPNet {
	cidrs := n.Spec.PodCIDRs
	if len(cidrs) == 0 && n.Spec.PodCIDR != "" {
		cidrs = []string{n.Spec.PodCIDR}
	}
	var out []*net.IPNet
	for _, s := range cidrs {
		if _, ipn, err := net.ParseCIDR(s); err == nil {
			out = append(out, ipn)
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

func overlapsAny(n *net.IPNet, others []*net.IPNet) bool {
	for _, o := range others {
		if o.Contains(n.IP) || n.Contains(o.IP) {
			return true
		}
	}
	return false
}
