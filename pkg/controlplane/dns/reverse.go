package dns

import (
	"net"
	"strconv"
	"strings"

	"github.com/miekg/dns"
)

const (
	v4Reverse = "in-addr.arpa."
	v6Reverse = "ip6.arpa."
)

// ptr answers a reverse name with the services that have its IP as a
// cluster IP, else the published endpoints with that address (the DNS
// spec's PTR records). nil means the IP is not the cluster's.
func (z *zone) ptr(qname string) []dns.RR {
	ip := reverseIP(qname)
	if ip == nil {
		return nil
	}
	var rrs []dns.RR
	for _, svc := range z.services.ServicesByIP(ip.String()) {
		rrs = append(rrs, ptrRR(qname, z.serviceName(svc), z.ttl))
	}
	if len(rrs) > 0 {
		return rrs
	}
	for _, e := range z.endpoints.EndpointsByIP(ip.String()) {
		svc, ok := z.services.Service(e.Namespace, e.Service)
		if !ok || !containsEndpoint(z.published(svc), e) {
			continue
		}
		rrs = append(rrs, ptrRR(qname, endpointName(e)+"."+z.serviceName(svc), z.ttl))
	}
	return dns.Dedup(rrs, nil)
}

func containsEndpoint(eps []Endpoint, e Endpoint) bool {
	for _, p := range eps {
		if p.IP == e.IP && p.Hostname == e.Hostname {
			return true
		}
	}
	return false
}

// reverseIP reads the address of a full in-addr.arpa (4 labels) or
// ip6.arpa (32 nibbles) name; nil for anything else.
func reverseIP(name string) net.IP {
	name = strings.ToLower(dns.Fqdn(name))
	switch {
	case strings.HasSuffix(name, "."+v4Reverse):
		return reverseV4(dns.SplitDomainName(strings.TrimSuffix(name, v4Reverse)))
	case strings.HasSuffix(name, "."+v6Reverse):
		return reverseV6(dns.SplitDomainName(strings.TrimSuffix(name, v6Reverse)))
	}
	return nil
}

func reverseV4(labels []string) net.IP {
	if len(labels) != net.IPv4len {
		return nil
	}
	ip := make(net.IP, net.IPv4len)
	for i, l := range labels {
		n, err := strconv.ParseUint(l, 10, 8)
		if err != nil {
			return nil
		}
		ip[net.IPv4len-1-i] = byte(n)
	}
	return ip
}

func reverseV6(labels []string) net.IP {
	if len(labels) != 2*net.IPv6len {
		return nil
	}
	ip := make(net.IP, net.IPv6len)
	for i, l := range labels {
		n, err := strconv.ParseUint(l, 16, 4)
		if err != nil || len(l) != 1 {
			return nil
		}
		pos := len(labels) - 1 - i // nibbles come least significant first
		ip[pos/2] |= byte(n) << (4 * (1 - pos%2))
	}
	return ip
}
