package dns

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"time"

	"github.com/miekg/dns"
)

const (
	// queryTimeout bounds the work for one query, forwarding included (the
	// forward plugin's overall deadline).
	queryTimeout = 5 * time.Second
	// maxChase bounds the CNAME chain followed for ExternalName services.
	maxChase = 8
	// shutdownTimeout bounds the wait for in-flight queries on stop.
	shutdownTimeout = 2 * time.Second
)

// Server is the cluster DNS server.
type Server struct {
	cfg  Config
	log  *slog.Logger
	zone *zone
	fwd  *forwarder
	acl  acl
	rate *limiter

	// Set by Listen.
	udp net.PacketConn
	tcp net.Listener
	// ctx is Serve's context, the parent of every query's.
	ctx context.Context
}

// New checks cfg and reads the upstream resolvers. A missing resolv.conf
// is not fatal: names outside the zone then get SERVFAIL.
func New(cfg Config) (*Server, error) {
	cfg.setDefaults()
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("cluster DNS config: %w", err)
	}
	ups, err := upstreamsOf(&cfg)
	if err != nil {
		if len(cfg.Upstreams) > 0 {
			return nil, err
		}
		cfg.Logger.Warn("cluster DNS: no upstream resolvers; names outside the cluster domain will fail", "err", err)
	}
	return &Server{
		cfg: cfg,
		log: cfg.Logger,
		zone: &zone{name: dns.Fqdn(strings.ToLower(cfg.ClusterDomain)), ttl: cfg.TTL,
			serial: uint32(time.Now().Unix()), services: cfg.Services, endpoints: cfg.Endpoints},
		fwd:  newForwarder(ups),
		acl:  acl{cidrs: cfg.RecursionCIDRs, nodes: cfg.Nodes},
		rate: newLimiter(cfg.RateLimit, maxRateClients, cfg.Now),
		ctx:  context.Background(),
	}, nil
}

// Listen binds the UDP and TCP sockets of Address.
func (s *Server) Listen() error {
	udp, tcp, err := listen(s.cfg.Address)
	if err != nil {
		return err
	}
	s.udp, s.tcp = udp, tcp
	kept, dropped := withoutSelf(s.fwd.upstreams, udp.LocalAddr().(*net.UDPAddr))
	if len(dropped) > 0 {
		s.log.Warn("cluster DNS: ignoring upstreams that are this server (a forwarding loop)", "upstreams", dropped)
	}
	s.fwd.upstreams = kept
	return nil
}

// Addr is the bound address (after Listen).
func (s *Server) Addr() string {
	if s.udp == nil {
		return ""
	}
	return s.udp.LocalAddr().String()
}

// Serve answers queries on the sockets bound by Listen until ctx ends.
func (s *Server) Serve(ctx context.Context) error {
	if s.udp == nil {
		return errors.New("cluster DNS: Serve before Listen")
	}
	s.ctx = ctx
	s.log.Info("cluster DNS serving", "address", s.Addr(), "domain", strings.TrimSuffix(s.zone.name, "."),
		"upstreams", s.fwd.upstreams, "ttl", s.zone.ttl)
	errc := make(chan error, 2)
	go func() { errc <- serve(ctx, &dns.Server{PacketConn: s.udp, Handler: s}) }()
	go func() { errc <- serve(ctx, &dns.Server{Listener: s.tcp, Handler: s}) }()
	err := errors.Join(<-errc, <-errc)
	s.log.Info("cluster DNS stopped")
	return err
}

// serve runs srv until ctx ends, then shuts it down. Shutdown waits for
// the start, since a server shut down before it starts would serve on.
func serve(ctx context.Context, srv *dns.Server) error {
	started := make(chan struct{})
	srv.NotifyStartedFunc = func() { close(started) }
	errc := make(chan error, 1)
	go func() { errc <- srv.ActivateAndServe() }()
	select {
	case err := <-errc:
		return fmt.Errorf("cluster DNS: %w", err)
	case <-started:
	}
	select {
	case err := <-errc:
		return fmt.Errorf("cluster DNS stopped unexpectedly: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
	defer cancel()
	if err := srv.ShutdownContext(sctx); err != nil {
		return fmt.Errorf("cluster DNS shutdown: %w", err)
	}
	return <-errc
}
