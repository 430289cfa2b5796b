package proxy

import (
	"context"
	"net/netip"
	"slices"

	v1 "k8s.io/api/core/v1"
)

// Conntrack deletes connection tracking entries. UDP (and SCTP) flows
// keep the DNAT decision of their first packet for as long as packets
// keep coming, so a client that sends steadily (a resolver to its DNS
// service) would go on sending to an endpoint that is gone, or, for a
// flow that started while the service had no endpoints, to nowhere. The
// Proxier deletes such flows after the sync that changed the rules, as
// kube-proxy does; the next packet then creates a new entry through the
// new rules.
type Conntrack interface {
	// ClearFlows deletes the entries that any filter selects and returns
	// how many it deleted. Entries that vanish meanwhile are not errors.
	ClearFlows(ctx context.Context, filters []FlowFilter) (int, error)
}

// FlowFilter selects the conntrack entries of the flows a client sent to
// one service address whose endpoint is not among Keep.
type FlowFilter struct {
	Protocol v1.Protocol
	// Dst is the address the client sent to: a cluster IP. The zero
	// value matches any destination (a NodePort, which every local
	// address serves).
	Dst netip.Addr
	// Port is the destination port the client used: the service port for
	// a cluster IP, the NodePort otherwise.
	Port int32
	// Keep lists the endpoints whose flows stay. Every other entry is
	// deleted: those DNATed to another endpoint and those not DNATed at
	// all (sent while the service had no endpoints).
	Keep []Endpoint
}

// clearsConntrack tells whether flows of the protocol outlive their
// endpoint (kube-proxy: UDP and SCTP; TCP connections to a gone endpoint
// are reset or time out on their own).
func clearsConntrack(p v1.Protocol) bool {
	return p == v1.ProtocolUDP || p == v1.ProtocolSCTP
}

// staleFlowFilters returns what to delete from conntrack once the rules
// of a service port changed from old to cur (either may be nil: a new or
// a removed port). Flows to an address the port no longer has are all
// stale. Flows to an address of cur are stale unless they go to one of
// its endpoints, and are looked for when cur lost endpoints, or when the
// address is new to it or had no endpoints (flows sent meanwhile were not
// DNATed), or always with reconcile (full syncs, where old may not be
// known).
func staleFlowFilters(old, cur *ServicePort, reconcile bool) []FlowFilter {
	var out []FlowFilter
	sameProto := old != nil && cur != nil && cur.Name.Protocol == old.Name.Protocol
	sameIP := sameProto && cur.ClusterIP == old.ClusterIP && cur.Port == old.Port
	sameNodePort := sameProto && cur.NodePort == old.NodePort
	if old != nil && clearsConntrack(old.Name.Protocol) {
		if !sameIP {
			out = append(out, FlowFilter{Protocol: old.Name.Protocol, Dst: old.ClusterIP, Port: old.Port})
		}
		if old.NodePort != 0 && !sameNodePort {
			out = append(out, FlowFilter{Protocol: old.Name.Protocol, Port: old.NodePort})
		}
	}
	if cur == nil || !clearsConntrack(cur.Name.Protocol) {
		return out
	}
	lost := old != nil && slices.ContainsFunc(old.Endpoints, func(e Endpoint) bool {
		return !slices.Contains(cur.Endpoints, e)
	})
	stale := func(same bool) bool {
		switch {
		case reconcile:
			return true
		case !same:
			return len(cur.Endpoints) > 0
		default:
			return lost || (len(old.Endpoints) == 0 && len(cur.Endpoints) > 0)
		}
	}
	keep := slices.Clone(cur.Endpoints)
	if stale(sameIP) {
		out = append(out, FlowFilter{Protocol: cur.Name.Protocol, Dst: cur.ClusterIP, Port: cur.Port, Keep: keep})
	}
	if cur.NodePort != 0 && stale(sameNodePort) {
		out = append(out, FlowFilter{Protocol: cur.Name.Protocol, Port: cur.NodePort, Keep: keep})
	}
	return out
}

// Flow is what a conntrack entry tells of a flow: where the client sent
// it (original direction) and where it went (the source of the reply
// direction: the endpoint for a DNATed flow, Dst itself otherwise).
type Flow struct {
	Protocol v1.Protocol
	Dst      netip.AddrPort
	Endpoint netip.AddrPort
}

type filterKey struct {
	proto v1.Protocol
	dst   netip.Addr // zero for NodePort filters
	port  int32
}

// flowMatcher indexes filters. A filter for the flow's exact destination
// wins over a NodePort filter for its port: a cluster IP is not a local
// address, so NodePort rules never saw its flows.
type flowMatcher map[filterKey][]FlowFilter

func newFlowMatcher(filters []FlowFilter) flowMatcher {
	m := make(flowMatcher)
	for _, f := range filters {
		k := filterKey{f.Protocol, f.Dst, f.Port}
		m[k] = append(m[k], f)
	}
	return m
}

// stale tells whether a filter selects the flow for deletion.
func (m flowMatcher) stale(f Flow) bool {
	fs, ok := m[filterKey{f.Protocol, f.Dst.Addr(), int32(f.Dst.Port())}]
	if !ok {
		fs = m[filterKey{f.Protocol, netip.Addr{}, int32(f.Dst.Port())}]
	}
	for _, flt := range fs {
		if !slices.ContainsFunc(flt.Keep, func(e Endpoint) bool {
			return e.IP == f.Endpoint.Addr() && e.Port == int32(f.Endpoint.Port())
		}) {
			return true
		}
	}
	return false
}
