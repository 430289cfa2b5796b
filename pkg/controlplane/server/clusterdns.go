package server

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"time"

	"k8s.io/client-go/informers"

	"github.com/nodeagent/nodeagent/pkg/controlplane/controller/nodeipam"
	clusterdns "github.com/nodeagent/nodeagent/pkg/controlplane/dns"
	"github.com/nodeagent/nodeagent/pkg/controlplane/pki"
	"github.com/nodeagent/nodeagent/pkg/controlplane/registry"
)

// Cluster DNS defaults: port 53 of the host's IP, where pods reach it
// (the kube-dns service's endpoint); the zone is kubelet's
// --cluster-domain default.
const (
	DefaultDNSAddress    = "0.0.0.0:53"
	DefaultClusterDomain = clusterdns.DefaultClusterDomain
	DefaultDNSRateLimit  = clusterdns.DefaultRateLimit

	// dnsSyncTimeout bounds the wait for the caches before answering, as
	// CoreDNS starts unsynced after a few seconds rather than not at all.
	dnsSyncTimeout = 10 * time.Second
)

func (c *Config) validateDNS() error {
	if c.DNSAddress == "" {
		return nil
	}
	if _, _, err := net.SplitHostPort(c.DNSAddress); err != nil {
		return fmt.Errorf("--dns-address %q: %w", c.DNSAddress, err)
	}
	if c.ClusterDomain != "" {
		if err := clusterdns.ValidateDomain(c.ClusterDomain); err != nil {
			return fmt.Errorf("--cluster-domain: %w", err)
		}
	}
	return nil
}

// ClusterDNSIP is the address to give pods as their nameserver (the
// agent's clusterDNS): the DNS address, or this host's IP when it binds
// every address. Empty when there is no DNS server pods can use: none
// configured, a loopback address, or a port other than 53 (resolv.conf
// has no ports).
func (c *Config) ClusterDNSIP() string {
	host, port, err := net.SplitHostPort(c.DNSAddress)
	if err != nil || port != "53" {
		return ""
	}
	ip := net.ParseIP(host)
	switch {
	case ip == nil || ip.IsLoopback():
		return ""
	case ip.IsUnspecified():
		return clusterdns.HostIP()
	}
	return ip.String()
}

// dnsListenAddress is where the server binds: an unspecified host means
// where pods reach it, this host's IP (the kube-dns endpoint and the
// nameserver pods get), not every address of the host; it is every
// address only when the host has no IP to give pods.
func (c *Config) dnsListenAddress() string {
	host, port, err := net.SplitHostPort(c.DNSAddress)
	if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsUnspecified() {
		return c.DNSAddress
	}
	if hostIP := clusterdns.HostIP(); hostIP != "" {
		return net.JoinHostPort(hostIP, port)
	}
	return c.DNSAddress
}

// dnsRecursionCIDRs are the client networks the cluster DNS forwards
// names outside the cluster domain for: the pods' and the services'.
func (c *Config) dnsRecursionCIDRs() ([]netip.Prefix, error) {
	pods := c.ClusterCIDR
	if pods == "" {
		pods = nodeipam.DefaultClusterCIDR
	}
	var out []netip.Prefix
	for _, cidr := range []string{pods, registry.ServiceClusterIPRange} {
		p, err := netip.ParsePrefix(cidr)
		if err != nil {
			return nil, fmt.Errorf("cluster DNS client network %q: %w", cidr, err)
		}
		out = append(out, p.Masked())
	}
	return out, nil
}

// runClusterDNS serves the cluster DNS from informers of its own identity
// (clusterDNSClient) until ctx ends. A default address that cannot be bound is logged and
// skipped, so that a host DNS server on port 53 does not stop the control
// plane; an address set explicitly must work.
func runClusterDNS(ctx context.Context, cfg Config, p *pki.PKI, log *slog.Logger) error {
	if cfg.DNSAddress == "" {
		return nil
	}
	client, err := clusterDNSClient(ctx, cfg, p, log)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("cluster DNS client: %w", err)
	}
	factory := informers.NewSharedInformerFactory(client, 0) // listers only: nothing to resync
	defer factory.Shutdown()
	srv, err := newClusterDNS(cfg, factory, log)
	if err != nil {
		return err
	}
	if err := srv.Listen(); err != nil {
		if cfg.DNSAddress != DefaultDNSAddress {
			return fmt.Errorf("cluster DNS: %w", err)
		}
		log.Error("cluster DNS not started: another server holds the port (or it needs root); "+
			"pods get no cluster DNS until --dns-address names a free address", "address", cfg.DNSAddress, "err", err)
		return nil
	}
	factory.Start(ctx.Done())
	syncCtx, cancel := context.WithTimeout(ctx, dnsSyncTimeout)
	defer cancel()
	for typ, ok := range factory.WaitForCacheSync(syncCtx.Done()) {
		if !ok && ctx.Err() == nil {
			log.Warn("cluster DNS answering before its cache synced", "type", typ.String())
		}
	}
	return srv.Serve(ctx)
}

func newClusterDNS(cfg Config, factory informers.SharedInformerFactory, log *slog.Logger) (*clusterdns.Server, error) {
	svcs, err := clusterdns.NewInformerServices(factory)
	if err != nil {
		return nil, err
	}
	eps, err := clusterdns.NewInformerEndpoints(factory)
	if err != nil {
		return nil, err
	}
	nodes, err := clusterdns.NewInformerNodes(factory)
	if err != nil {
		return nil, err
	}
	cidrs, err := cfg.dnsRecursionCIDRs()
	if err != nil {
		return nil, err
	}
	return clusterdns.New(clusterdns.Config{
		Address:        cfg.dnsListenAddress(),
		ClusterDomain:  cfg.ClusterDomain,
		Upstreams:      cfg.DNSUpstreams,
		RecursionCIDRs: cidrs,
		Nodes:          nodes,
		RateLimit:      cfg.DNSRateLimit,
		Services:       svcs,
		Endpoints:      eps,
		Logger:         log,
	})
}
