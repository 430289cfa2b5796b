package dns

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"strings"
	"time"

	"github.com/miekg/dns"
)

// Defaults, as CoreDNS's kubernetes plugin and forward plugin.
const (
	DefaultClusterDomain = "cluster.local"
	DefaultResolvConf    = "/etc/resolv.conf"
	// DefaultTTL is the kubernetes plugin's default record TTL (kubeadm's
	// Corefile raises it to 30 with `ttl 30`).
	DefaultTTL = 5
	// maxTTL is the kubernetes plugin's cap.
	maxTTL = 3600
)

// Config configures New.
type Config struct {
	// Address is the host:port served over UDP and TCP (port 0 picks a
	// free port, the same one for both).
	Address string
	// ClusterDomain is the zone answered from the caches (default
	// cluster.local).
	ClusterDomain string
	// Upstreams are the resolvers (IP or IP:port) names outside the zone
	// are forwarded to; empty reads the nameservers of ResolvConf.
	Upstreams []string
	// ResolvConf is read when Upstreams is empty (default /etc/resolv.conf).
	ResolvConf string
	// TTL of the answers and of negative caching (default 5, at most 3600).
	TTL uint32

	// RecursionCIDRs are the client networks (the pod and service CIDRs)
	// whose names outside the cluster zone are forwarded; loopback and
	// node addresses are too, everyone else gets REFUSED for them. The
	// cluster zone is answered to anyone who reaches the server.
	RecursionCIDRs []netip.Prefix
	// Nodes knows the node addresses; nil: none are allowed to recurse.
	Nodes Nodes
	// RateLimit is the UDP responses a second each client gets before its
	// answers come back truncated (TC, so that it retries over TCP): no
	// reflection beyond that; 0 takes DefaultRateLimit, negative disables.
	RateLimit int
	// Now is the clock of the rate limit (default time.Now).
	Now func() time.Time

	Services  Services
	Endpoints Endpoints
	Logger    *slog.Logger
}

func (c *Config) setDefaults() {
	if c.ClusterDomain == "" {
		c.ClusterDomain = DefaultClusterDomain
	}
	if c.ResolvConf == "" {
		c.ResolvConf = DefaultResolvConf
	}
	if c.TTL == 0 {
		c.TTL = DefaultTTL
	}
	if c.RateLimit == 0 {
		c.RateLimit = DefaultRateLimit
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

func (c *Config) validate() error {
	var errs []error
	if c.Services == nil || c.Endpoints == nil {
		errs = append(errs, errors.New("services and endpoints sources are required"))
	}
	if _, _, err := net.SplitHostPort(c.Address); err != nil {
		errs = append(errs, fmt.Errorf("address %q: %w", c.Address, err))
	}
	if err := ValidateDomain(c.ClusterDomain); err != nil {
		errs = append(errs, err)
	}
	if c.TTL > maxTTL {
		errs = append(errs, fmt.Errorf("ttl %d above %d", c.TTL, maxTTL))
	}
	for _, u := range c.Upstreams {
		if _, err := upstreamAddr(u); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// ValidateDomain checks a cluster domain, for flag validation.
func ValidateDomain(domain string) error {
	if _, ok := dns.IsDomainName(domain); !ok || strings.Trim(domain, ".") == "" {
		return fmt.Errorf("cluster domain %q is not a domain name", domain)
	}
	return nil
}

// upstreamAddr normalises an upstream given as IP or IP:port to IP:port.
func upstreamAddr(s string) (string, error) {
	if ip := net.ParseIP(s); ip != nil {
		return net.JoinHostPort(ip.String(), "53"), nil
	}
	host, port, err := net.SplitHostPort(s)
	if err != nil || net.ParseIP(host) == nil || port == "" {
		return "", fmt.Errorf("upstream %q is not an IP or IP:port", s)
	}
	return s, nil
}
