package server

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"time"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"

	clusterdns "github.com/nodeagent/nodeagent/pkg/controlplane/dns"
)

// Cluster DNS defaults: every address on port 53, so that pods reach it
// at the host's IP; the zone is kubelet's --cluster-domain default.
const (
	DefaultDNSAddress    = "0.0.0.0:53"
	DefaultClusterDomain = clusterdns.DefaultClusterDomain

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

// dnsFallback is tried when the default address is in use: this host's IP
// on the same port is usually free where a local stub resolver (such as
// systemd-resolved on 127.0.0.53) holds the port on loopback.
func (c *Config) dnsFallback() string {
	host, port, err := net.SplitHostPort(c.DNSAddress)
	if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsUnspecified() {
		return ""
	}
	if hostIP := clusterdns.HostIP(); hostIP != "" {
		return net.JoinHostPort(hostIP, port)
	}
	return ""
}

// runClusterDNS serves the cluster DNS from the admin client's informers
// until ctx ends. A default address that cannot be bound is logged and
// skipped, so that a host DNS server on port 53 does not stop the control
// plane; an address set explicitly must work.
func runClusterDNS(ctx context.Context, cfg Config, client kubernetes.Interface, log *slog.Logger) error {
	if cfg.DNSAddress == "" {
		return nil
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
	return clusterdns.New(clusterdns.Config{
		Address:       cfg.DNSAddress,
		Fallback:      cfg.dnsFallback(),
		ClusterDomain: cfg.ClusterDomain,
		Upstreams:     cfg.DNSUpstreams,
		Services:      svcs,
		Endpoints:     eps,
		Logger:        log,
	})
}
