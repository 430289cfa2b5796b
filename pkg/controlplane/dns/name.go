package dns

import (
	"strings"

	"github.com/miekg/dns"
)

// The second-level labels of the cluster zone.
const (
	svcLabel = "svc"
	podLabel = "pod"
)

// request is a name in the cluster zone split along the grammar of the
// DNS spec, as CoreDNS's kubernetes plugin parses it:
//
//	_<port>._<proto>.<service>.<ns>.svc.<zone>
//	<endpoint>.<service>.<ns>.svc.<zone>
//	<service>.<ns>.svc.<zone>
//	<a-b-c-d>.<ns>.pod.<zone>
//
// Shorter names (the apex, svc.<zone>, <ns>.svc.<zone>) leave the inner
// fields empty. All fields are lower case: Kubernetes names are, and the
// spec makes matching case-insensitive.
type request struct {
	kind      string // svcLabel, podLabel, or "" for the apex
	namespace string
	name      string // the service, or the dashed pod IP
	endpoint  string
	port      string // without its underscore; empty matches any
	protocol  string // without its underscore; empty matches any
}

// parseName splits qname (fully qualified) inside zone. ok is false for
// names that cannot exist: too long, or neither under svc nor pod.
func parseName(qname, zone string) (r request, ok bool) {
	base := strings.TrimSuffix(strings.ToLower(qname), zone)
	segs := dns.SplitDomainName(base)
	if len(segs) == 0 {
		return r, true
	}
	last := len(segs) - 1
	r.kind = segs[last]
	if r.kind != svcLabel && r.kind != podLabel {
		return request{}, false
	}
	rest := segs[:last]
	take := func() string {
		if len(rest) == 0 {
			return ""
		}
		s := rest[len(rest)-1]
		rest = rest[:len(rest)-1]
		return s
	}
	r.namespace = take()
	r.name = take()
	switch len(rest) {
	case 0:
	case 1:
		r.endpoint = rest[0]
	case 2:
		r.port = strings.TrimPrefix(rest[0], "_")
		r.protocol = strings.TrimPrefix(rest[1], "_")
	default:
		return request{}, false
	}
	return r, true
}

// endpointName is the label an endpoint answers to under its service: its
// hostname, else its IP with dashes, as CoreDNS names it.
func endpointName(e Endpoint) string {
	if e.Hostname != "" {
		return strings.ToLower(e.Hostname)
	}
	return dashed(e.IP)
}

// dashed writes an IP with dashes for its dots (IPv4) or colons (IPv6).
func dashed(ip string) string {
	if strings.Contains(ip, ".") {
		return strings.ReplaceAll(ip, ".", "-")
	}
	return strings.ReplaceAll(ip, ":", "-")
}

// undash reads a pod label back as an IP string: a-b-c-d is IPv4, anything
// else IPv6 with dashes for colons.
func undash(label string) string {
	if strings.Count(label, "-") == 3 && !strings.Contains(label, "--") {
		return strings.ReplaceAll(label, "-", ".")
	}
	return strings.ReplaceAll(label, "-", ":")
}
