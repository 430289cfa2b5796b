package dns

import (
	"net"
	"strings"

	"github.com/miekg/dns"
	v1 "k8s.io/api/core/v1"
)

// tolerateUnreadyAnnotation is the annotation the DNS spec honours, with
// spec.publishNotReadyAddresses, to publish endpoints that are not ready.
const tolerateUnreadyAnnotation = "service.alpha.kubernetes.io/tolerate-unready-endpoints"

// answer is the outcome of a lookup in the cluster zone. An empty rrs with
// RcodeSuccess is NODATA.
type answer struct {
	rcode int
	rrs   []dns.RR
	extra []dns.RR
	// chase is the target of a CNAME in rrs, still to be resolved.
	chase string
}

var (
	nxdomain = answer{rcode: dns.RcodeNameError}
	nodata   = answer{rcode: dns.RcodeSuccess}
)

func found(rrs ...dns.RR) answer { return answer{rcode: dns.RcodeSuccess, rrs: rrs} }

// zone answers names in the cluster domain from the caches.
type zone struct {
	name      string // fully qualified, lower case
	ttl       uint32
	serial    uint32
	services  Services
	endpoints Endpoints
}

// contains reports whether name is in the zone.
func (z *zone) contains(name string) bool { return dns.IsSubDomain(z.name, strings.ToLower(name)) }

func (z *zone) soa() dns.RR { return soaRR(z.name, z.serial, z.ttl) }

// lookup answers qname (in the zone; answers keep its case) for qtype.
func (z *zone) lookup(qname string, qtype uint16) answer {
	if strings.EqualFold(qname, "dns-version."+z.name) {
		if qtype == dns.TypeTXT {
			return found(versionRR(qname))
		}
		return nodata
	}
	r, ok := parseName(qname, z.name)
	switch {
	case !ok:
		return nxdomain
	case r.kind == "":
		return z.apex(qname, qtype)
	case r.namespace == "": // svc.<zone> and pod.<zone> exist, empty
		return nodata
	case !z.services.NamespaceExists(r.namespace):
		return nxdomain
	case r.name == "":
		return nodata
	case r.kind == podLabel:
		return z.pod(qname, qtype, r)
	}
	return z.service(qname, qtype, r)
}

func (z *zone) apex(qname string, qtype uint16) answer {
	switch qtype {
	case dns.TypeSOA:
		return found(z.soa())
	case dns.TypeNS:
		return found(nsRR(qname, z.ttl))
	}
	return nodata
}

// pod answers <a-b-c-d>.<ns>.pod.<zone> with the IP in its name, without
// looking for the pod (CoreDNS's "pods insecure", kube-dns's behaviour).
func (z *zone) pod(qname string, qtype uint16, r request) answer {
	ip := undash(r.name)
	if r.endpoint != "" || r.port != "" || net.ParseIP(ip) == nil {
		return nxdomain
	}
	if rr := addressRR(qname, ip, qtype, z.ttl); rr != nil {
		return found(rr)
	}
	return nodata
}

func (z *zone) service(qname string, qtype uint16, r request) answer {
	svc, ok := z.services.Service(r.namespace, r.name)
	switch {
	case !ok:
		return nxdomain
	case svc.Spec.Type == v1.ServiceTypeExternalName:
		return z.external(qname, qtype, r, svc)
	case (r.port != "" || r.protocol != "") && !hasPort(svc, r):
		return nxdomain
	case isHeadless(svc) || r.endpoint != "":
		return z.endpointAnswer(qname, qtype, r, svc)
	}
	return z.clusterIP(qname, qtype, r, svc)
}

// external answers an ExternalName service with a CNAME, which the server
// chases for address queries. Like CoreDNS it has no SRV records and no
// endpoints.
func (z *zone) external(qname string, qtype uint16, r request, svc *v1.Service) answer {
	target := svc.Spec.ExternalName
	if _, ok := dns.IsDomainName(target); !ok || target == "" || r.endpoint != "" {
		return nxdomain
	}
	if qtype == dns.TypeSRV {
		return nodata
	}
	a := found(cnameRR(qname, target, z.ttl))
	if qtype != dns.TypeCNAME {
		a.chase = dns.Fqdn(target)
	}
	return a
}

func (z *zone) clusterIP(qname string, qtype uint16, r request, svc *v1.Service) answer {
	a := found()
	if qtype != dns.TypeSRV {
		for _, ip := range clusterIPs(svc) {
			if rr := addressRR(qname, ip, qtype, z.ttl); rr != nil {
				a.rrs = append(a.rrs, rr)
			}
		}
		return a
	}
	target := z.serviceName(svc)
	for _, p := range svc.Spec.Ports {
		if matchPort(r, p.Name, p.Protocol) {
			a.rrs = append(a.rrs, srvRR(qname, target, p.Port, z.ttl))
		}
	}
	weighSRV(a.rrs)
	if len(a.rrs) > 0 {
		a.extra = addressRRs(target, clusterIPs(svc), z.ttl)
	}
	return a
}

// endpointAnswer answers from the service's published endpoints: a
// headless service's name, and <endpoint>.<service> of any service.
func (z *zone) endpointAnswer(qname string, qtype uint16, r request, svc *v1.Service) answer {
	eps := z.published(svc)
	if r.endpoint != "" {
		eps = byName(eps, r.endpoint)
		if len(eps) == 0 {
			return nxdomain
		}
	}
	a := found()
	for _, e := range eps {
		if qtype == dns.TypeSRV {
			z.addEndpointSRV(&a, qname, r, svc, e)
			continue
		}
		if !endpointHasPort(e, r) {
			continue
		}
		if rr := addressRR(qname, e.IP, qtype, z.ttl); rr != nil {
			a.rrs = append(a.rrs, rr)
		}
	}
	a.rrs = dns.Dedup(a.rrs, nil)
	a.extra = dns.Dedup(a.extra, nil)
	weighSRV(a.rrs)
	return a
}

// addEndpointSRV adds e's SRV records, one per matching port, targeting
// <endpoint>.<service>.<ns>.svc.<zone>, with its address as glue.
func (z *zone) addEndpointSRV(a *answer, qname string, r request, svc *v1.Service, e Endpoint) {
	target := endpointName(e) + "." + z.serviceName(svc)
	added := false
	for _, p := range e.Ports {
		if matchPort(r, p.Name, p.Protocol) {
			a.rrs = append(a.rrs, srvRR(qname, target, p.Port, z.ttl))
			added = true
		}
	}
	if added {
		a.extra = append(a.extra, addressRRs(target, []string{e.IP}, z.ttl)...)
	}
}

// published are the endpoints of svc the DNS spec counts as ready.
func (z *zone) published(svc *v1.Service) []Endpoint {
	all := z.endpoints.ServiceEndpoints(svc.Namespace, svc.Name)
	unready := svc.Spec.PublishNotReadyAddresses || svc.Annotations[tolerateUnreadyAnnotation] == "true"
	var out []Endpoint
	for _, e := range all {
		if e.Ready || unready {
			out = append(out, e)
		}
	}
	return out
}

// serviceName is <service>.<ns>.svc.<zone>.
func (z *zone) serviceName(svc *v1.Service) string {
	return svc.Name + "." + svc.Namespace + "." + svcLabel + "." + z.name
}

func byName(eps []Endpoint, name string) []Endpoint {
	var out []Endpoint
	for _, e := range eps {
		if endpointName(e) == name {
			out = append(out, e)
		}
	}
	return out
}

// matchPort matches a port against the request's _port._proto; empty
// parts match anything, and the comparison ignores case.
func matchPort(r request, name string, proto v1.Protocol) bool {
	return (r.port == "" || strings.EqualFold(r.port, name)) &&
		(r.protocol == "" || strings.EqualFold(r.protocol, string(proto)))
}

func hasPort(svc *v1.Service, r request) bool {
	for _, p := range svc.Spec.Ports {
		if matchPort(r, p.Name, p.Protocol) {
			return true
		}
	}
	return false
}

func endpointHasPort(e Endpoint, r request) bool {
	if r.port == "" && r.protocol == "" {
		return true
	}
	for _, p := range e.Ports {
		if matchPort(r, p.Name, p.Protocol) {
			return true
		}
	}
	return false
}

func isHeadless(svc *v1.Service) bool { return svc.Spec.ClusterIP == v1.ClusterIPNone }

// clusterIPs are the service's cluster IPs, both families.
func clusterIPs(svc *v1.Service) []string {
	if len(svc.Spec.ClusterIPs) > 0 {
		return svc.Spec.ClusterIPs
	}
	if svc.Spec.ClusterIP != "" {
		return []string{svc.Spec.ClusterIP}
	}
	return nil
}
