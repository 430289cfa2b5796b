package proxy

import (
	"slices"
	"strings"
	"time"

	"sigs.k8s.io/knftables"
)

// TableName is the ip-family table the proxy owns entirely, as kube-proxy
// owns "kube-proxy"; nothing else should write to it.
const TableName = "nodeagent-proxy"

// Fixed chains and maps of the table (kube-proxy's names).
const (
	filterInputChain    = "filter-input"
	filterForwardChain  = "filter-forward"
	filterOutputChain   = "filter-output"
	natPreroutingChain  = "nat-prerouting"
	natOutputChain      = "nat-output"
	natPostroutingChain = "nat-postrouting"

	servicesChain               = "services"
	serviceEndpointsCheckChain  = "service-endpoints-check"
	nodePortEndpointsCheckChain = "nodeport-endpoints-check"
	masqueradingChain           = "masquerading"
	markMasqChain               = "mark-for-masquerade"
	rejectChain                 = "reject-chain"

	serviceIPsMap          = "service-ips"
	serviceNodePortsMap    = "service-nodeports"
	noEndpointServicesMap  = "no-endpoint-services"
	noEndpointNodePortsMap = "no-endpoint-nodeports"

	// masqueradeMark is kube-proxy's default (--masquerade-bit 14).
	masqueradeMark = "0x4000"
	// noLocalhost keeps NodePorts off 127.0.0.0/8: DNAT of loopback
	// traffic to a pod needs route_localnet, which kube-proxy's nftables
	// mode gave up too.
	noLocalhost = "ip daddr != 127.0.0.0/8"
)

type baseChain struct {
	name     string
	typ      knftables.BaseChainType
	hook     knftables.BaseChainHook
	priority knftables.BaseChainPriority
}

// baseChains hook the table into netfilter. The filter chains run before
// DNAT so that they see the service address, not the endpoint's.
var baseChains = []baseChain{
	{filterInputChain, knftables.FilterType, knftables.InputHook, knftables.DNATPriority + "-10"},
	{filterForwardChain, knftables.FilterType, knftables.ForwardHook, knftables.DNATPriority + "-10"},
	{filterOutputChain, knftables.FilterType, knftables.OutputHook, knftables.DNATPriority + "-10"},
	{natPreroutingChain, knftables.NATType, knftables.PreroutingHook, knftables.DNATPriority},
	{natOutputChain, knftables.NATType, knftables.OutputHook, knftables.DNATPriority},
	{natPostroutingChain, knftables.NATType, knftables.PostroutingHook, knftables.SNATPriority},
}

// fixedChains are the table's chains that are not per service, with their
// rules. "reject" is only valid in input, forward and output hooks on
// kernels before 5.9, hence the endpoint checks there and not in
// prerouting.
var fixedChains = []fixedChain{
	{filterInputChain, []string{
		"ct state new jump " + nodePortEndpointsCheckChain,
		"ct state new jump " + serviceEndpointsCheckChain,
	}},
	{filterForwardChain, []string{"ct state new jump " + serviceEndpointsCheckChain}},
	{filterOutputChain, []string{"ct state new jump " + serviceEndpointsCheckChain}},
	{natPreroutingChain, []string{"jump " + servicesChain}},
	{natOutputChain, []string{"jump " + servicesChain}},
	{natPostroutingChain, []string{"jump " + masqueradingChain}},
	{servicesChain, []string{
		"ip daddr . meta l4proto . th dport vmap @" + serviceIPsMap,
		"fib daddr type local " + noLocalhost + " meta l4proto . th dport vmap @" + serviceNodePortsMap,
	}},
	{serviceEndpointsCheckChain, []string{"ip daddr . meta l4proto . th dport vmap @" + noEndpointServicesMap}},
	{nodePortEndpointsCheckChain, []string{noLocalhost + " meta l4proto . th dport vmap @" + noEndpointNodePortsMap}},
	// The mark is cleared before masquerading so that a packet that is
	// encapsulated and routed again is not masqueraded twice.
	{masqueradingChain, []string{
		"mark and " + masqueradeMark + " == 0 return",
		"mark set mark xor " + masqueradeMark,
		"masquerade fully-random",
	}},
	{markMasqChain, []string{"mark set mark or " + masqueradeMark}},
	{rejectChain, []string{"reject"}},
}

var fixedMaps = []fixedMap{
	{serviceIPsMap, "ipv4_addr . inet_proto . inet_service : verdict", "ClusterIP traffic"},
	{serviceNodePortsMap, "inet_proto . inet_service : verdict", "NodePort traffic"},
	{noEndpointServicesMap, "ipv4_addr . inet_proto . inet_service : verdict", "reject traffic to services without endpoints"},
	{noEndpointNodePortsMap, "inet_proto . inet_service : verdict", "reject traffic to NodePorts without endpoints"},
}

type fixedChain struct {
	name  string
	rules []string
}

type fixedMap struct{ name, typ, comment string }

func isFixedChain(name string) bool {
	return slices.ContainsFunc(fixedChains, func(c fixedChain) bool { return c.name == name })
}

func isBaseChain(name string) bool {
	return slices.ContainsFunc(baseChains, func(c baseChain) bool { return c.name == name })
}

func isFixedMap(name string) bool {
	return slices.ContainsFunc(fixedMaps, func(m fixedMap) bool { return m.name == name })
}

// writeBase (re)writes the fixed part of the table and empties its maps,
// for a full sync. With recreate, base chains are deleted first so that
// a changed hook or priority takes effect (nft refuses to change them in
// place).
func writeBase(tx *knftables.Transaction, recreate bool) {
	tx.Add(&knftables.Table{Comment: knftables.PtrTo("service proxy rules of nodeagent")})
	if recreate {
		for _, bc := range baseChains {
			c := &knftables.Chain{Name: bc.name}
			tx.Add(c)
			tx.Flush(c)
			tx.Delete(c)
		}
	}
	for _, bc := range baseChains {
		tx.Add(&knftables.Chain{Name: bc.name, Type: knftables.PtrTo(bc.typ), Hook: knftables.PtrTo(bc.hook),
			Priority: knftables.PtrTo(bc.priority)})
	}
	for _, c := range fixedChains {
		if !isBaseChain(c.name) {
			tx.Add(&knftables.Chain{Name: c.name})
		}
		tx.Flush(&knftables.Chain{Name: c.name})
	}
	for _, m := range fixedMaps {
		tx.Add(&knftables.Map{Name: m.name, Type: m.typ, Comment: knftables.PtrTo(m.comment)})
		tx.Flush(&knftables.Map{Name: m.name})
	}
	for _, c := range fixedChains {
		for _, r := range c.rules {
			tx.Add(&knftables.Rule{Chain: c.name, Rule: r})
		}
	}
}

// elemKey identifies a map element: its map and its key, joined with
// " . " as nft prints concatenations.
type elemKey struct{ mapName, key string }

type elemValue struct{ verdict, comment string }

// portRules is everything one service port owns in the table. Chains
// hold their rules in order; rules only reference chains and sets of the
// same port or fixed ones, so ports are written independently.
type portRules struct {
	chains map[string][]string
	sets   map[string]time.Duration // affinity sets and their timeouts
	elems  map[elemKey]elemValue
}

// renderer turns desired service ports into rules.
type renderer struct {
	// clusterCIDR is the pod network; traffic to a cluster IP from
	// outside it is masqueraded. Empty: all of it is.
	clusterCIDR string
}

func (r *renderer) render(p *ServicePort) *portRules {
	out := &portRules{
		chains: make(map[string][]string),
		sets:   make(map[string]time.Duration),
		elems:  make(map[elemKey]elemValue),
	}
	proto := strings.ToLower(string(p.Name.Protocol))
	clusterKey := knftables.Concat(p.ClusterIP, ".", proto, ".", p.Port)
	nodePortKey := knftables.Concat(proto, ".", p.NodePort)
	if len(p.Endpoints) == 0 {
		// Nothing to DNAT to: the filter chains reject new connections
		// instead of letting them time out.
		reject := elemValue{verdict: "goto " + rejectChain, comment: p.Name.String()}
		out.elems[elemKey{noEndpointServicesMap, clusterKey}] = reject
		if p.NodePort != 0 {
			out.elems[elemKey{noEndpointNodePortsMap, nodePortKey}] = reject
		}
		return out
	}
	svcChain := serviceChain(p.Name)
	out.chains[svcChain] = r.serviceRules(p, proto)
	out.elems[elemKey{serviceIPsMap, clusterKey}] = elemValue{verdict: "goto " + svcChain}
	if p.NodePort != 0 {
		// NodePort traffic may come from anywhere and leave for another
		// node: always masquerade it (externalTrafficPolicy Cluster).
		ext := externalChain(p.Name)
		out.chains[ext] = []string{"jump " + markMasqChain, "goto " + svcChain}
		out.elems[elemKey{serviceNodePortsMap, nodePortKey}] = elemValue{verdict: "goto " + ext}
	}
	for _, ep := range p.Endpoints {
		rules := []string{
			// Hairpin: a pod reaching itself through the service must
			// see the reply come from the service, not from itself.
			knftables.Concat("ip saddr", ep.IP, "jump", markMasqChain),
		}
		if p.AffinityTimeout > 0 {
			set := affinitySet(p.Name, ep, p.AffinityTimeout)
			out.sets[set] = p.AffinityTimeout
			rules = append(rules, "update @"+set+" { ip saddr }")
		}
		rules = append(rules, knftables.Concat("meta l4proto", proto, "dnat to", ep.String()))
		out.chains[endpointChain(p.Name, ep)] = rules
	}
	return out
}

// serviceRules: masquerade when needed, then the client's remembered
// endpoint (session affinity), then a random endpoint.
func (r *renderer) serviceRules(p *ServicePort, proto string) []string {
	masq := knftables.Concat("ip daddr", p.ClusterIP, proto, "dport", p.Port)
	if r.clusterCIDR != "" {
		masq = knftables.Concat(masq, "ip saddr !=", r.clusterCIDR)
	}
	rules := []string{knftables.Concat(masq, "jump", markMasqChain)}
	if p.AffinityTimeout > 0 {
		for _, ep := range p.Endpoints {
			rules = append(rules, knftables.Concat("ip saddr @"+affinitySet(p.Name, ep, p.AffinityTimeout),
				"goto", endpointChain(p.Name, ep)))
		}
	}
	var vmap []string
	for i, ep := range p.Endpoints {
		if i > 0 {
			vmap = append(vmap, ",")
		}
		vmap = append(vmap, knftables.Concat(i, ": goto", endpointChain(p.Name, ep)))
	}
	return append(rules, knftables.Concat("numgen random mod", len(p.Endpoints), "vmap {", vmap, "}"))
}
