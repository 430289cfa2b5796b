package endpoint

import (
	"log/slog"

	v1 "k8s.io/api/core/v1"
	utilnet "k8s.io/utils/net"

	"github.com/nodeagent/nodeagent/pkg/controlplane/controller/internal/endpointutil"
)

// desiredSubsets lists the service's pods as one subset per pod and port,
// then packs them.
func desiredSubsets(svc *v1.Service, pods []*v1.Pod, log *slog.Logger) []v1.EndpointSubset {
	publishAll := svc.Spec.PublishNotReadyAddresses
	var subsets []v1.EndpointSubset
	for _, pod := range pods {
		if !endpointutil.ShouldPodBeInEndpoints(pod, publishAll) {
			continue
		}
		addr, ok := podAddress(svc, pod)
		if !ok {
			log.Debug("no pod IP of the service's family", "service", svc.Namespace+"/"+svc.Name, "pod", pod.Name)
			continue
		}
		ready := publishAll || endpointutil.IsPodReady(pod)
		if len(svc.Spec.Ports) == 0 {
			// Headless services may have no ports: addresses alone.
			if svc.Spec.ClusterIP == v1.ClusterIPNone {
				subsets = append(subsets, subset(addr, nil, ready))
			}
			continue
		}
		for i := range svc.Spec.Ports {
			sp := &svc.Spec.Ports[i]
			port, err := endpointutil.FindPort(pod, sp)
			if err != nil {
				log.Debug("service port not found on pod", "service", svc.Namespace+"/"+svc.Name, "pod", pod.Name, "err", err)
				continue
			}
			ep := &v1.EndpointPort{Name: sp.Name, Port: port, Protocol: sp.Protocol, AppProtocol: sp.AppProtocol}
			subsets = append(subsets, subset(addr, ep, ready))
		}
	}
	return repack(subsets)
}

func subset(addr v1.EndpointAddress, port *v1.EndpointPort, ready bool) v1.EndpointSubset {
	ss := v1.EndpointSubset{}
	if port != nil {
		ss.Ports = []v1.EndpointPort{*port}
	}
	if ready {
		ss.Addresses = []v1.EndpointAddress{addr}
	} else {
		ss.NotReadyAddresses = []v1.EndpointAddress{addr}
	}
	return ss
}

// podAddress is the pod's address of the service's IP family.
func podAddress(svc *v1.Service, pod *v1.Pod) (v1.EndpointAddress, bool) {
	ips := pod.Status.PodIPs
	if len(ips) == 0 && pod.Status.PodIP != "" {
		ips = []v1.PodIP{{IP: pod.Status.PodIP}}
	}
	wantV6 := wantsIPv6(svc, pod)
	for _, ip := range ips {
		if utilnet.IsIPv6String(ip.IP) != wantV6 {
			continue
		}
		node := pod.Spec.NodeName
		addr := v1.EndpointAddress{IP: ip.IP, NodeName: &node, TargetRef: &v1.ObjectReference{
			Kind: "Pod", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID}}
		if endpointutil.ShouldSetHostname(pod, svc) {
			addr.Hostname = pod.Spec.Hostname
		}
		return addr, true
	}
	return v1.EndpointAddress{}, false
}

// wantsIPv6 tells the service's family: its first ipFamilies entry, else
// (the families are not always set) its cluster IP's, else for headless
// services the pod's primary IP's.
func wantsIPv6(svc *v1.Service, pod *v1.Pod) bool {
	switch {
	case len(svc.Spec.IPFamilies) > 0:
		return svc.Spec.IPFamilies[0] == v1.IPv6Protocol
	case svc.Spec.ClusterIP != "" && svc.Spec.ClusterIP != v1.ClusterIPNone:
		return utilnet.IsIPv6String(svc.Spec.ClusterIP)
	}
	return utilnet.IsIPv6String(pod.Status.PodIP)
}
