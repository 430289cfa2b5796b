package endpointslice

import (
	"cmp"
	"slices"

	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	utilnet "k8s.io/utils/net"

	"github.com/nodeagent/nodeagent/pkg/controlplane/controller/internal/endpointutil"
)

// podEndpoint is the pod as an endpoint of svc with addresses of type at;
// node may be nil (unknown).
func podEndpoint(pod *v1.Pod, node *v1.Node, svc *v1.Service, at discovery.AddressType) discovery.Endpoint {
	serving := endpointutil.IsPodReady(pod)
	terminating := pod.DeletionTimestamp != nil
	// Consumers that only know "ready" must not send to a terminating pod,
	// unless the service publishes every address.
	ready := svc.Spec.PublishNotReadyAddresses || (serving && !terminating)
	ep := discovery.Endpoint{
		Addresses:  podAddresses(pod, at),
		Conditions: discovery.EndpointConditions{Ready: &ready, Serving: &serving, Terminating: &terminating},
		TargetRef:  &v1.ObjectReference{Kind: "Pod", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID},
	}
	if pod.Spec.NodeName != "" {
		name := pod.Spec.NodeName
		ep.NodeName = &name
	}
	if node != nil && node.Labels[v1.LabelTopologyZone] != "" {
		zone := node.Labels[v1.LabelTopologyZone]
		ep.Zone = &zone
	}
	if endpointutil.ShouldSetHostname(pod, svc) {
		hostname := pod.Spec.Hostname
		ep.Hostname = &hostname
	}
	return ep
}

// podAddresses are the pod's IPs of the address type, in canonical form.
func podAddresses(pod *v1.Pod, at discovery.AddressType) []string {
	ips := pod.Status.PodIPs
	if len(ips) == 0 && pod.Status.PodIP != "" {
		ips = []v1.PodIP{{IP: pod.Status.PodIP}}
	}
	var out []string
	for _, p := range ips {
		ip := utilnet.ParseIPSloppy(p.IP)
		if ip == nil {
			continue
		}
		if utilnet.IsIPv6(ip) == (at == discovery.AddressTypeIPv6) {
			out = append(out, ip.String())
		}
	}
	return out
}

// endpointPorts are the service's ports as resolved on pod, sorted; a
// port whose named targetPort the pod lacks is left out. Headless services
// may have none.
func endpointPorts(svc *v1.Service, pod *v1.Pod) []discovery.EndpointPort {
	ports := []discovery.EndpointPort{}
	for i := range svc.Spec.Ports {
		sp := &svc.Spec.Ports[i]
		num, err := endpointutil.FindPort(pod, sp)
		if err != nil {
			continue
		}
		name, proto := sp.Name, sp.Protocol
		ports = append(ports, discovery.EndpointPort{Name: &name, Port: &num, Protocol: &proto, AppProtocol: sp.AppProtocol})
	}
	slices.SortFunc(ports, comparePorts)
	return ports
}

func comparePorts(a, b discovery.EndpointPort) int {
	return cmp.Or(cmp.Compare(deref(a.Name), deref(b.Name)), cmp.Compare(deref(a.Port), deref(b.Port)),
		cmp.Compare(deref(a.Protocol), deref(b.Protocol)), cmp.Compare(deref(a.AppProtocol), deref(b.AppProtocol)))
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// addressTypes are the slices' address types for svc: its IP families;
// without them (this API server leaves them unset) its cluster IP's
// family, and both for headless services.
func addressTypes(svc *v1.Service) sets.Set[discovery.AddressType] {
	types := sets.New[discovery.AddressType]()
	for _, f := range svc.Spec.IPFamilies {
		switch f {
		case v1.IPv4Protocol:
			types.Insert(discovery.AddressTypeIPv4)
		case v1.IPv6Protocol:
			types.Insert(discovery.AddressTypeIPv6)
		}
	}
	switch {
	case types.Len() > 0:
	case svc.Spec.ClusterIP != "" && svc.Spec.ClusterIP != v1.ClusterIPNone && utilnet.IsIPv6String(svc.Spec.ClusterIP):
		types.Insert(discovery.AddressTypeIPv6)
	case svc.Spec.ClusterIP != "" && svc.Spec.ClusterIP != v1.ClusterIPNone:
		types.Insert(discovery.AddressTypeIPv4)
	default:
		types.Insert(discovery.AddressTypeIPv4, discovery.AddressTypeIPv6)
	}
	return types
}
