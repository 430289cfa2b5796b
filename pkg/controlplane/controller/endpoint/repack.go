package endpoint

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// addrKey identifies an address: two pods may share an IP (host network).
type addrKey struct {
	ip  string
	uid types.UID
}

func keyOf(a *v1.EndpointAddress) addrKey {
	k := addrKey{ip: a.IP}
	if a.TargetRef != nil {
		k.uid = a.TargetRef.UID
	}
	return k
}

// portKey identifies a port by value (AppProtocol is a pointer).
type portKey struct {
	name, protocol, appProtocol string
	port                        int32
}

func portKeyOf(p v1.EndpointPort) portKey {
	k := portKey{name: p.Name, protocol: string(p.Protocol), port: p.Port}
	if p.AppProtocol != nil {
		k.appProtocol = *p.AppProtocol
	}
	return k
}

// noPort stands for "no ports" (headless services), so that addresses
// without ports are packed too.
var noPort = v1.EndpointPort{Port: -1}

// repack puts subsets into the canonical layout of upstream's
// RepackSubsets, so that equal endpoints compare equal: each address
// once per port (not ready winning over ready), then one subset per
// distinct set of addresses with all the ports they serve, everything
// sorted.
func repack(subsets []v1.EndpointSubset) []v1.EndpointSubset {
	addrs := map[addrKey]v1.EndpointAddress{}
	ports := map[portKey]v1.EndpointPort{}
	byPort := map[portKey]map[addrKey]bool{} // address → ready
	note := func(p v1.EndpointPort, a v1.EndpointAddress, ready bool) {
		pk, ak := portKeyOf(p), keyOf(&a)
		if _, ok := addrs[ak]; !ok {
			addrs[ak] = a
		}
		ports[pk] = p
		if byPort[pk] == nil {
			byPort[pk] = map[addrKey]bool{}
		}
		if was, seen := byPort[pk][ak]; !seen || was {
			byPort[pk][ak] = ready
		}
	}
	for _, ss := range subsets {
		sp := ss.Ports
		if len(sp) == 0 {
			sp = []v1.EndpointPort{noPort}
		}
		for _, p := range sp {
			for _, a := range ss.Addresses {
				note(p, a, true)
			}
			for _, a := range ss.NotReadyAddresses {
				note(p, a, false)
			}
		}
	}
	return group(byPort, addrs, ports)
}

// group makes one subset per distinct address set.
func group(byPort map[portKey]map[addrKey]bool, addrs map[addrKey]v1.EndpointAddress, ports map[portKey]v1.EndpointPort) []v1.EndpointSubset {
	bySet := map[string]*v1.EndpointSubset{}
	var order []string
	for pk, set := range byPort {
		sig := signature(set)
		ss, ok := bySet[sig]
		if !ok {
			ss = &v1.EndpointSubset{}
			for ak, ready := range set {
				if ready {
					ss.Addresses = append(ss.Addresses, addrs[ak])
				} else {
					ss.NotReadyAddresses = append(ss.NotReadyAddresses, addrs[ak])
				}
			}
			bySet[sig] = ss
			order = append(order, sig)
		}
		if pk != portKeyOf(noPort) {
			ss.Ports = append(ss.Ports, ports[pk])
		}
	}
	out := make([]v1.EndpointSubset, 0, len(order))
	for _, sig := range order {
		ss := bySet[sig]
		slices.SortFunc(ss.Addresses, compareAddress)
		slices.SortFunc(ss.NotReadyAddresses, compareAddress)
		slices.SortFunc(ss.Ports, comparePort)
		out = append(out, *ss)
	}
	slices.SortFunc(out, func(a, b v1.EndpointSubset) int { return strings.Compare(subsetKey(a), subsetKey(b)) })
	return out
}

// signature names an address set with its readiness.
func signature(set map[addrKey]bool) string {
	parts := make([]string, 0, len(set))
	for k, ready := range set {
		parts = append(parts, fmt.Sprintf("%s/%s/%t", k.ip, k.uid, ready))
	}
	slices.Sort(parts)
	return strings.Join(parts, ",")
}

func compareAddress(a, b v1.EndpointAddress) int {
	ka, kb := keyOf(&a), keyOf(&b)
	return cmp.Or(strings.Compare(ka.ip, kb.ip), strings.Compare(string(ka.uid), string(kb.uid)))
}

func comparePort(a, b v1.EndpointPort) int {
	ka, kb := portKeyOf(a), portKeyOf(b)
	return cmp.Or(strings.Compare(ka.name, kb.name), cmp.Compare(ka.port, kb.port),
		strings.Compare(ka.protocol, kb.protocol), strings.Compare(ka.appProtocol, kb.appProtocol))
}

// subsetKey orders subsets by their ports, then their addresses.
func subsetKey(ss v1.EndpointSubset) string {
	var b strings.Builder
	for _, p := range ss.Ports {
		fmt.Fprintf(&b, "%s:%d/%s;", p.Name, p.Port, p.Protocol)
	}
	for _, list := range [][]v1.EndpointAddress{ss.Addresses, ss.NotReadyAddresses} {
		b.WriteString("|")
		for _, a := range list {
			fmt.Fprintf(&b, "%s/%s,", a.IP, keyOf(&a).uid)
		}
	}
	return b.String()
}
