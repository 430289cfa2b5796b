package dns

import (
	"fmt"
	"net"

	"github.com/miekg/dns"
)

// upstreamsOf is cfg.Upstreams as IP:port, else the nameservers of
// cfg.ResolvConf.
func upstreamsOf(cfg *Config) ([]string, error) {
	if len(cfg.Upstreams) > 0 {
		out := make([]string, 0, len(cfg.Upstreams))
		for _, u := range cfg.Upstreams {
			addr, err := upstreamAddr(u)
			if err != nil {
				return nil, err
			}
			out = append(out, addr)
		}
		return out, nil
	}
	conf, err := dns.ClientConfigFromFile(cfg.ResolvConf)
	if err != nil {
		return nil, fmt.Errorf("read upstreams from %s: %w", cfg.ResolvConf, err)
	}
	out := make([]string, 0, len(conf.Servers))
	for _, s := range conf.Servers {
		out = append(out, net.JoinHostPort(s, conf.Port))
	}
	return out, nil
}

// withoutSelf drops the upstreams that are this server itself (bound at
// self), which would forward every query back to itself: the host's
// resolv.conf may name a local address on the same port.
func withoutSelf(upstreams []string, self *net.UDPAddr) (kept, dropped []string) {
	for _, u := range upstreams {
		if isSelf(u, self) {
			dropped = append(dropped, u)
			continue
		}
		kept = append(kept, u)
	}
	return kept, dropped
}

func isSelf(upstream string, self *net.UDPAddr) bool {
	host, port, err := net.SplitHostPort(upstream)
	ip := net.ParseIP(host)
	if err != nil || ip == nil || port != fmt.Sprint(self.Port) {
		return false
	}
	if !self.IP.IsUnspecified() {
		return ip.Equal(self.IP)
	}
	return ip.IsLoopback() || isLocalIP(ip)
}

// isLocalIP reports whether ip is an address of this host.
func isLocalIP(ip net.IP) bool {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return false
	}
	for _, a := range addrs {
		if ipn, ok := a.(*net.IPNet); ok && ipn.IP.Equal(ip) {
			return true
		}
	}
	return false
}
