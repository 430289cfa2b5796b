package dns

import (
	"net"
	"net/netip"
)

// Nodes tells the node addresses apart, for the recursion ACL.
type Nodes interface {
	// IsNodeAddress reports whether ip is an address of a node.
	IsNodeAddress(ip netip.Addr) bool
}

// acl is who may have names outside the cluster zone resolved: the
// clients CoreDNS's acl plugin would be told to allow in a cluster's
// Corefile. Everyone else gets REFUSED, so that the server is no open
// resolver (an amplifier) for whoever reaches its address.
type acl struct {
	// cidrs are the client networks (the pod and service CIDRs).
	cidrs []netip.Prefix
	// nodes, when set, knows the node addresses (hostNetwork pods and
	// masqueraded traffic come from those).
	nodes Nodes
}

// mayRecurse reports whether src may have names outside the cluster zone
// forwarded: loopback, the configured networks and the node addresses.
func (a acl) mayRecurse(src netip.Addr) bool {
	src = src.Unmap()
	if !src.IsValid() {
		return false
	}
	if src.IsLoopback() {
		return true
	}
	for _, p := range a.cidrs {
		if p.Contains(src) {
			return true
		}
	}
	return a.nodes != nil && a.nodes.IsNodeAddress(src)
}

// clientIP is the source address of a query (invalid when the transport
// has none, which the ACL refuses).
func clientIP(addr net.Addr) netip.Addr {
	var ip net.IP
	switch a := addr.(type) {
	case *net.UDPAddr:
		ip = a.IP
	case *net.TCPAddr:
		ip = a.IP
	}
	out, _ := netip.AddrFromSlice(ip)
	return out.Unmap()
}
