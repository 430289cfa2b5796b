package dns

import (
	"net"

	"github.com/miekg/dns"
)

// schemaVersion is the DNS spec version CoreDNS reports in
// dns-version.<zone> TXT, with the TTL it uses for it.
const (
	schemaVersion = "1.1.0"
	versionTTL    = 28800
)

// SOA timers, as CoreDNS's; the minimum (negative caching TTL) is the
// record TTL.
const (
	soaRefresh = 7200
	soaRetry   = 1800
	soaExpire  = 86400
)

func hdr(name string, rrtype uint16, ttl uint32) dns.RR_Header {
	return dns.RR_Header{Name: name, Rrtype: rrtype, Class: dns.ClassINET, Ttl: ttl}
}

// addressRR is the A or AAAA record of ip for qtype, or nil when the
// family does not match (or ip does not parse).
func addressRR(name, ip string, qtype uint16, ttl uint32) dns.RR {
	parsed := net.ParseIP(ip)
	switch {
	case parsed == nil:
		return nil
	case parsed.To4() != nil && qtype == dns.TypeA:
		return &dns.A{Hdr: hdr(name, dns.TypeA, ttl), A: parsed.To4()}
	case parsed.To4() == nil && qtype == dns.TypeAAAA:
		return &dns.AAAA{Hdr: hdr(name, dns.TypeAAAA, ttl), AAAA: parsed}
	}
	return nil
}

// addressRRs are the A and AAAA records of ips, both families: glue for
// the Additional section of SRV answers.
func addressRRs(name string, ips []string, ttl uint32) []dns.RR {
	var out []dns.RR
	for _, ip := range ips {
		for _, t := range []uint16{dns.TypeA, dns.TypeAAAA} {
			if rr := addressRR(name, ip, t, ttl); rr != nil {
				out = append(out, rr)
			}
		}
	}
	return out
}

func srvRR(name, target string, port int32, ttl uint32) *dns.SRV {
	return &dns.SRV{Hdr: hdr(name, dns.TypeSRV, ttl), Port: uint16(port), Target: target}
}

// weighSRV gives the SRV records CoreDNS's weights: priority 0 for all,
// and the weight 100 split evenly among them.
func weighSRV(rrs []dns.RR) {
	if len(rrs) == 0 {
		return
	}
	w := uint16(100 / len(rrs))
	if w == 0 {
		w = 1
	}
	for _, rr := range rrs {
		if s, ok := rr.(*dns.SRV); ok {
			s.Weight = w
		}
	}
}

func cnameRR(name, target string, ttl uint32) dns.RR {
	return &dns.CNAME{Hdr: hdr(name, dns.TypeCNAME, ttl), Target: dns.Fqdn(target)}
}

func ptrRR(name, target string, ttl uint32) dns.RR {
	return &dns.PTR{Hdr: hdr(name, dns.TypePTR, ttl), Ptr: target}
}

func versionRR(name string) dns.RR {
	return &dns.TXT{Hdr: hdr(name, dns.TypeTXT, versionTTL), Txt: []string{schemaVersion}}
}

// nsName is the zone's name server, as CoreDNS names it.
func nsName(zone string) string { return "ns.dns." + zone }

func nsRR(zone string, ttl uint32) dns.RR {
	return &dns.NS{Hdr: hdr(zone, dns.TypeNS, ttl), Ns: nsName(zone)}
}

func soaRR(zone string, serial, ttl uint32) dns.RR {
	return &dns.SOA{
		Hdr:     hdr(zone, dns.TypeSOA, ttl),
		Ns:      nsName(zone),
		Mbox:    "hostmaster." + zone,
		Serial:  serial,
		Refresh: soaRefresh,
		Retry:   soaRetry,
		Expire:  soaExpire,
		Minttl:  ttl,
	}
}
