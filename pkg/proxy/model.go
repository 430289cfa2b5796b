package proxy

import (
	"cmp"
	"net/netip"
	"slices"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/types"
)

// LabelServiceProxyName marks a service as handled by another proxy;
// kube-proxy leaves such services alone, and so do we.
const LabelServiceProxyName = "service.kubernetes.io/service-proxy-name"

// ServicePortName names one port of a service, as kube-proxy's
// proxy.ServicePortName: the port's name may be empty for a single-port
// service.
type ServicePortName struct {
	types.NamespacedName
	Port     string
	Protocol v1.Protocol
}

// String is "namespace/name:port/protocol" (":port" left out when the
// port has no name).
func (n ServicePortName) String() string {
	s := n.NamespacedName.String()
	if n.Port != "" {
		s += ":" + n.Port
	}
	return s + "/" + strings.ToLower(string(n.Protocol))
}

func (n ServicePortName) compare(o ServicePortName) int {
	return cmp.Or(cmp.Compare(n.Namespace, o.Namespace), cmp.Compare(n.Name, o.Name),
		cmp.Compare(n.Port, o.Port), cmp.Compare(n.Protocol, o.Protocol))
}

// Endpoint is one backend of a service port.
type Endpoint struct {
	IP   netip.Addr
	Port int32
}

// String is "ip:port", the form nft's "dnat to" takes.
func (e Endpoint) String() string {
	return netip.AddrPortFrom(e.IP, uint16(e.Port)).String()
}

func (e Endpoint) compare(o Endpoint) int {
	return cmp.Or(e.IP.Compare(o.IP), cmp.Compare(e.Port, o.Port))
}

// ServicePort is the desired state of one service port: what the ruleset
// must do with traffic to it.
type ServicePort struct {
	Name      ServicePortName
	ClusterIP netip.Addr
	Port      int32
	// NodePort is 0 unless the service is of type NodePort or
	// LoadBalancer.
	NodePort int32
	// AffinityTimeout is set for sessionAffinity ClientIP: how long a
	// client sticks to the endpoint it was sent to.
	AffinityTimeout time.Duration
	// Endpoints are sorted by address and port; empty means traffic is
	// rejected.
	Endpoints []Endpoint
}

// equal tells whether two states render to the same rules.
func (p *ServicePort) equal(o *ServicePort) bool {
	return p.Name == o.Name && p.ClusterIP == o.ClusterIP && p.Port == o.Port &&
		p.NodePort == o.NodePort && p.AffinityTimeout == o.AffinityTimeout &&
		slices.Equal(p.Endpoints, o.Endpoints)
}

// BuildServicePorts computes the desired state of every proxied service
// port, sorted by name. Headless and ExternalName services, services of
// another proxy and services without an IPv4 cluster IP are skipped;
// slices are matched to services by their kubernetes.io/service-name
// label and to ports by port name and protocol, so that named target
// ports (resolved per pod by the EndpointSlice controller) need nothing
// more here.
func BuildServicePorts(services []*v1.Service, endpointSlices []*discoveryv1.EndpointSlice) []ServicePort {
	bySvc := make(map[types.NamespacedName][]*discoveryv1.EndpointSlice)
	for _, s := range endpointSlices {
		name := s.Labels[discoveryv1.LabelServiceName]
		if name == "" || s.AddressType != discoveryv1.AddressTypeIPv4 {
			continue
		}
		key := types.NamespacedName{Namespace: s.Namespace, Name: name}
		bySvc[key] = append(bySvc[key], s)
	}
	var out []ServicePort
	for _, svc := range services {
		out = append(out, servicePorts(svc, bySvc[types.NamespacedName{Namespace: svc.Namespace, Name: svc.Name}])...)
	}
	sortServicePorts(out)
	return out
}

func sortServicePorts(ports []ServicePort) {
	slices.SortFunc(ports, func(a, b ServicePort) int { return a.Name.compare(b.Name) })
}

// servicePorts is the desired state of one service's ports.
func servicePorts(svc *v1.Service, svcSlices []*discoveryv1.EndpointSlice) []ServicePort {
	ip, ok := proxiedClusterIP(svc)
	if !ok {
		return nil
	}
	var affinity time.Duration
	if svc.Spec.SessionAffinity == v1.ServiceAffinityClientIP {
		affinity = affinityTimeout(svc)
	}
	nodePorts := svc.Spec.Type == v1.ServiceTypeNodePort || svc.Spec.Type == v1.ServiceTypeLoadBalancer
	out := make([]ServicePort, 0, len(svc.Spec.Ports))
	for _, sp := range svc.Spec.Ports {
		name := ServicePortName{
			NamespacedName: types.NamespacedName{Namespace: svc.Namespace, Name: svc.Name},
			Port:           sp.Name,
			Protocol:       protocolOf(sp.Protocol),
		}
		p := ServicePort{Name: name, ClusterIP: ip, Port: sp.Port, AffinityTimeout: affinity,
			Endpoints: endpointsFor(name, svcSlices)}
		if nodePorts {
			p.NodePort = sp.NodePort
		}
		out = append(out, p)
	}
	return out
}

// proxiedClusterIP is the IPv4 cluster IP of a service the proxy handles.
func proxiedClusterIP(svc *v1.Service) (netip.Addr, bool) {
	if svc.Spec.Type == v1.ServiceTypeExternalName || svc.Labels[LabelServiceProxyName] != "" {
		return netip.Addr{}, false
	}
	ips := svc.Spec.ClusterIPs
	if len(ips) == 0 {
		ips = []string{svc.Spec.ClusterIP}
	}
	for _, s := range ips {
		// "None" (headless) and "" do not parse.
		if ip, err := netip.ParseAddr(s); err == nil && ip.Is4() {
			return ip, true
		}
	}
	return netip.Addr{}, false
}

func affinityTimeout(svc *v1.Service) time.Duration {
	secs := int32(v1.DefaultClientIPServiceAffinitySeconds)
	if c := svc.Spec.SessionAffinityConfig; c != nil && c.ClientIP != nil && c.ClientIP.TimeoutSeconds != nil {
		secs = *c.ClientIP.TimeoutSeconds
	}
	return time.Duration(secs) * time.Second
}

// protocolOf defaults an unset protocol as the API server does.
func protocolOf(p v1.Protocol) v1.Protocol {
	if p == "" {
		return v1.ProtocolTCP
	}
	return p
}

// endpointState ranks what an endpoint may be used for: ready ones are
// used; serving terminating ones only when no endpoint is ready (as
// kube-proxy does, so that connections drain during a rollout instead of
// being refused).
type endpointState int

const (
	unusable endpointState = iota
	servingTerminating
	ready
)

func stateOf(c discoveryv1.EndpointConditions) endpointState {
	isReady := c.Ready == nil || *c.Ready
	serving := isReady
	if c.Serving != nil {
		serving = *c.Serving
	}
	terminating := c.Terminating != nil && *c.Terminating
	switch {
	case isReady:
		return ready
	case serving && terminating:
		return servingTerminating
	default:
		return unusable
	}
}

// endpointsFor collects the endpoints of one service port across the
// service's slices. An address listed twice (slices briefly overlap while
// the controller moves endpoints) counts once, in its best state.
func endpointsFor(name ServicePortName, svcSlices []*discoveryv1.EndpointSlice) []Endpoint {
	best := make(map[Endpoint]endpointState)
	use := servingTerminating
	for _, s := range svcSlices {
		port, ok := slicePort(s, name)
		if !ok {
			continue
		}
		for _, ep := range s.Endpoints {
			if len(ep.Addresses) == 0 {
				continue
			}
			// Like kube-proxy, only the first address is used: the
			// others are the same pod's.
			ip, err := netip.ParseAddr(ep.Addresses[0])
			if err != nil || !ip.Is4() {
				continue
			}
			e := Endpoint{IP: ip, Port: port}
			st := stateOf(ep.Conditions)
			best[e] = max(best[e], st)
			if st == ready {
				use = ready
			}
		}
	}
	var out []Endpoint
	for e, st := range best {
		if st == use {
			out = append(out, e)
		}
	}
	slices.SortFunc(out, Endpoint.compare)
	return out
}

// slicePort is the target port the slice lists for a service port.
func slicePort(s *discoveryv1.EndpointSlice, name ServicePortName) (int32, bool) {
	for _, p := range s.Ports {
		pname := ""
		if p.Name != nil {
			pname = *p.Name
		}
		proto := v1.ProtocolTCP
		if p.Protocol != nil {
			proto = *p.Protocol
		}
		if pname == name.Port && proto == name.Protocol && p.Port != nil {
			return *p.Port, true
		}
	}
	return 0, false
}

func sortNames(names []ServicePortName) {
	slices.SortFunc(names, ServicePortName.compare)
}

// countEndpoints sums the endpoints of ports, for logs.
func countEndpoints(ports []ServicePort) int {
	n := 0
	for i := range ports {
		n += len(ports[i].Endpoints)
	}
	return n
}
