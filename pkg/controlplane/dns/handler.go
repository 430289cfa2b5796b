package dns

import (
	"context"
	"net"

	"github.com/miekg/dns"
)

// maxUDPSize caps the EDNS0 buffer a client may ask for: DNS Flag Day
// 2020's 1232 bytes, the default of CoreDNS's bufsize plugin, which keeps
// answers from fragmenting and bounds what a spoofed query reflects.
// Larger answers are truncated (TC) and fetched over TCP.
const maxUDPSize = 1232

// ServeDNS implements dns.Handler.
func (s *Server) ServeDNS(w dns.ResponseWriter, req *dns.Msg) {
	ctx, cancel := context.WithTimeout(s.ctx, queryTimeout)
	defer cancel()
	src := clientIP(w.RemoteAddr())
	_, udp := w.RemoteAddr().(*net.UDPAddr)
	var resp *dns.Msg
	if udp && !s.rate.allow(src) {
		// Over its rate, a client gets an empty truncated answer no larger
		// than its query: a real one retries over TCP, a spoofed one
		// reflects nothing.
		resp = new(dns.Msg).SetReply(req)
		resp.Truncated = true
	} else {
		resp = s.respond(ctx, req, s.acl.mayRecurse(src))
	}
	fit(w, req, resp)
	if err := w.WriteMsg(resp); err != nil {
		s.log.Debug("cluster DNS: write answer", "client", w.RemoteAddr(), "err", err)
	}
}

// respond routes a query: the cluster zone is answered from the caches,
// reverse names of cluster IPs too, and everything else is forwarded when
// the client may recurse (REFUSED otherwise, as CoreDNS's acl block).
func (s *Server) respond(ctx context.Context, req *dns.Msg, recurse bool) *dns.Msg {
	if req.Opcode != dns.OpcodeQuery {
		return new(dns.Msg).SetRcode(req, dns.RcodeNotImplemented)
	}
	if len(req.Question) != 1 {
		return new(dns.Msg).SetRcode(req, dns.RcodeFormatError)
	}
	q := req.Question[0]
	if q.Qclass == dns.ClassINET && s.zone.contains(q.Name) {
		return s.authoritative(ctx, req, q, recurse)
	}
	if q.Qclass == dns.ClassINET && q.Qtype == dns.TypePTR {
		if rrs := s.zone.ptr(q.Name); len(rrs) > 0 {
			return reply(req, answer{rrs: rrs})
		}
	}
	if !recurse {
		return new(dns.Msg).SetRcode(req, dns.RcodeRefused)
	}
	return s.forward(ctx, req)
}

// authoritative answers a name in the cluster zone: NXDOMAIN and NODATA
// carry the SOA, for negative caching. The target of an ExternalName is
// resolved upstream only for clients that may recurse; others get the
// bare CNAME.
func (s *Server) authoritative(ctx context.Context, req *dns.Msg, q dns.Question, recurse bool) *dns.Msg {
	a := s.zone.lookup(q.Name, q.Qtype)
	if a.chase != "" {
		a.rrs = append(a.rrs, s.chase(ctx, a.chase, q.Qtype, 1, recurse)...)
	}
	m := reply(req, a)
	if len(m.Answer) == 0 {
		m.Ns = []dns.RR{s.zone.soa()}
	}
	return m
}

// chase resolves the target of an ExternalName CNAME for qtype, in the
// zone or upstream, as CoreDNS does; a failure leaves the bare CNAME.
func (s *Server) chase(ctx context.Context, target string, qtype uint16, depth int, recurse bool) []dns.RR {
	if depth > maxChase {
		return nil
	}
	if s.zone.contains(target) {
		a := s.zone.lookup(target, qtype)
		if a.chase == "" {
			return a.rrs
		}
		return append(a.rrs, s.chase(ctx, a.chase, qtype, depth+1, recurse)...)
	}
	if !recurse {
		return nil
	}
	resp, err := s.fwd.forward(ctx, new(dns.Msg).SetQuestion(target, qtype))
	if err != nil {
		s.log.Debug("cluster DNS: resolve ExternalName target", "target", target, "err", err)
		return nil
	}
	return resp.Answer
}

func (s *Server) forward(ctx context.Context, req *dns.Msg) *dns.Msg {
	resp, err := s.fwd.forward(ctx, req)
	if err != nil {
		s.log.Debug("cluster DNS: forward", "name", req.Question[0].Name, "err", err)
		m := new(dns.Msg).SetRcode(req, dns.RcodeServerFailure)
		m.RecursionAvailable = true
		return m
	}
	resp.Id = req.Id
	return resp
}

// reply is an authoritative answer to req.
func reply(req *dns.Msg, a answer) *dns.Msg {
	m := new(dns.Msg).SetRcode(req, a.rcode)
	m.Authoritative, m.RecursionAvailable, m.Compress = true, true, true
	m.Answer, m.Extra = a.rrs, a.extra
	return m
}

// fit sizes resp for the client: over UDP to its EDNS0 buffer (at most
// maxUDPSize), else 512 bytes, setting TC when records had to go. An
// EDNS0 query gets an OPT advertising maxUDPSize.
func fit(w dns.ResponseWriter, req, resp *dns.Msg) {
	size := dns.MinMsgSize
	if opt := req.IsEdns0(); opt != nil {
		size = min(max(size, int(opt.UDPSize())), maxUDPSize)
		if ours := resp.IsEdns0(); ours != nil {
			ours.SetUDPSize(maxUDPSize) // a forwarded answer carries the upstream's
		} else {
			resp.SetEdns0(maxUDPSize, false)
		}
	}
	if _, udp := w.RemoteAddr().(*net.UDPAddr); !udp {
		size = dns.MaxMsgSize
	}
	resp.Truncate(size)
	resp.Compress = true // Truncate turns it off when the answer fits without
}
