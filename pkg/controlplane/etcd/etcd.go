package etcd

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"strconv"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

// Defaults for the embedded server.
const (
	DefaultClientPort        = 2379
	DefaultPeerPort          = 2380
	DefaultStartTimeout      = time.Minute
	defaultDialTimeout       = 5 * time.Second
	defaultHealthCheckPrefix = "/nodeagent-health"
	memberName               = "nodeagent"
)

// Config selects and configures the etcd the control plane uses.
type Config struct {
	// DataDir is the embedded server's data directory (required unless
	// Servers is set). It is created with mode 0700 and reused on restart.
	DataDir string
	// ClientPort and PeerPort are the embedded server's loopback ports
	// (defaults 2379 and 2380).
	ClientPort int
	PeerPort   int
	// Tuning is the embedded server's quota, compaction and raft timings.
	Tuning Tuning
	// StartTimeout bounds the wait for the embedded server to become ready,
	// or for an external cluster to answer (default 1m).
	StartTimeout time.Duration

	// ServerTLS secures the embedded server (required for it).
	ServerTLS ServerTLS

	// Servers are the client URLs of an external etcd cluster. When set,
	// nothing is embedded.
	Servers []string
	// CAFile, CertFile and KeyFile configure the client's TLS: optional
	// for Servers, required for the embedded server, which accepts only
	// clients whose certificate ServerTLS.TrustedCAFile signed.
	CAFile, CertFile, KeyFile string

	Logger *slog.Logger
}

// ServerTLS is the embedded server's TLS, as kubeadm configures its etcd:
// the client and the peer port both serve TLS and refuse connections
// without a client certificate signed by TrustedCAFile.
type ServerTLS struct {
	TrustedCAFile             string
	CertFile, KeyFile         string // the client port's serving pair
	PeerCertFile, PeerKeyFile string
}

func (t ServerTLS) validate() error {
	if t.TrustedCAFile == "" || t.CertFile == "" || t.KeyFile == "" || t.PeerCertFile == "" || t.PeerKeyFile == "" {
		return errors.New("etcd: the embedded server needs ServerTLS (trusted CA, serving and peer pairs)")
	}
	return nil
}

// Etcd is a running etcd (embedded or external) and a client to it.
type Etcd struct {
	embedded *embed.Etcd
	closing  *atomic.Bool // demotes etcd's shutdown noise
	client   *clientv3.Client
	log      *slog.Logger
	quota    int64 // the embedded server's backend quota
}

// Start starts the embedded etcd server, or connects to the external
// cluster when cfg.Servers is set, and returns once it answers requests.
func Start(ctx context.Context, cfg Config) (*Etcd, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.StartTimeout <= 0 {
		cfg.StartTimeout = DefaultStartTimeout
	}
	if len(cfg.Servers) > 0 {
		return startExternal(ctx, cfg)
	}
	return startEmbedded(ctx, cfg)
}

// clientTLS is the client's TLS from cfg, nil when none is configured.
func (cfg Config) clientTLS() (*tls.Config, error) {
	if cfg.CAFile == "" && cfg.CertFile == "" && cfg.KeyFile == "" {
		return nil, nil
	}
	info := transport.TLSInfo{TrustedCAFile: cfg.CAFile, CertFile: cfg.CertFile, KeyFile: cfg.KeyFile}
	tlsCfg, err := info.ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("etcd client TLS: %w", err)
	}
	return tlsCfg, nil
}

func startExternal(ctx context.Context, cfg Config) (*Etcd, error) {
	tlsCfg, err := cfg.clientTLS()
	if err != nil {
		return nil, err
	}
	cli, err := newClient(cfg.Servers, tlsCfg)
	if err != nil {
		return nil, err
	}
	e := &Etcd{client: cli, log: cfg.Logger}
	if err := e.waitHealthy(ctx, cfg.StartTimeout); err != nil {
		_ = cli.Close()
		return nil, fmt.Errorf("external etcd %v: %w", cfg.Servers, err)
	}
	cfg.Logger.Info("connected to external etcd", "servers", cfg.Servers)
	return e, nil
}

func startEmbedded(ctx context.Context, cfg Config) (_ *Etcd, retErr error) {
	if cfg.DataDir == "" {
		return nil, errors.New("etcd: DataDir is required for the embedded server")
	}
	if err := cfg.ServerTLS.validate(); err != nil {
		return nil, err
	}
	if cfg.CAFile == "" || cfg.CertFile == "" || cfg.KeyFile == "" {
		return nil, errors.New("etcd: the embedded server needs the client's CAFile, CertFile and KeyFile")
	}
	tlsCfg, err := cfg.clientTLS()
	if err != nil {
		return nil, err
	}
	if cfg.ClientPort == 0 {
		cfg.ClientPort = DefaultClientPort
	}
	if cfg.PeerPort == 0 {
		cfg.PeerPort = DefaultPeerPort
	}
	if err := cfg.Tuning.Validate(); err != nil {
		return nil, err
	}
	if w := cfg.Tuning.quotaWarning(); w != "" {
		cfg.Logger.Warn(w, "quotaBackendBytes", cfg.Tuning.QuotaBackendBytes)
	}
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("etcd data dir: %w", err)
	}
	if err := os.Chmod(cfg.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("etcd data dir: %w", err)
	}

	ec := embed.NewConfig()
	ec.Name = memberName
	ec.Dir = cfg.DataDir
	clientURL := loopbackURL("https", cfg.ClientPort)
	peerURL := loopbackURL("https", cfg.PeerPort)
	ec.ClientTLSInfo = transport.TLSInfo{
		CertFile: cfg.ServerTLS.CertFile, KeyFile: cfg.ServerTLS.KeyFile,
		TrustedCAFile: cfg.ServerTLS.TrustedCAFile, ClientCertAuth: true,
	}
	ec.PeerTLSInfo = transport.TLSInfo{
		CertFile: cfg.ServerTLS.PeerCertFile, KeyFile: cfg.ServerTLS.PeerKeyFile,
		TrustedCAFile: cfg.ServerTLS.TrustedCAFile, ClientCertAuth: true,
	}
	ec.ListenClientUrls = []url.URL{clientURL}
	ec.AdvertiseClientUrls = []url.URL{clientURL}
	ec.ListenPeerUrls = []url.URL{peerURL}
	ec.AdvertisePeerUrls = []url.URL{peerURL}
	ec.InitialCluster = ec.InitialClusterFromName(ec.Name)
	closing := new(atomic.Bool)
	ec.Logger = "zap"
	ec.LogLevel = "warn"
	ec.ZapLoggerBuilder = embed.NewZapLoggerBuilder(newZapLogger(cfg.Logger, closing))
	cfg.Tuning.apply(ec)

	srv, err := embed.StartEtcd(ec)
	if err != nil {
		return nil, fmt.Errorf("start embedded etcd (data dir %s, client %s): %w", cfg.DataDir, clientURL.Host, err)
	}
	defer func() {
		if retErr != nil {
			closing.Store(true)
			srv.Close()
		}
	}()

	timer := time.NewTimer(cfg.StartTimeout)
	defer timer.Stop()
	select {
	case <-srv.Server.ReadyNotify():
	case err := <-srv.Err():
		return nil, fmt.Errorf("embedded etcd failed while starting: %w", err)
	case <-timer.C:
		return nil, fmt.Errorf("embedded etcd (data dir %s) not ready after %s: is another etcd using the data dir or port %d?",
			cfg.DataDir, cfg.StartTimeout, cfg.ClientPort)
	case <-ctx.Done():
		return nil, fmt.Errorf("embedded etcd start: %w", ctx.Err())
	}

	cli, err := newClient([]string{clientURL.String()}, tlsCfg)
	if err != nil {
		return nil, err
	}
	if err := advertisePeerURL(ctx, cli, srv, peerURL); err != nil {
		_ = cli.Close()
		return nil, err
	}
	cfg.Logger.Info("embedded etcd ready", "dataDir", cfg.DataDir, "client", clientURL.String())
	return &Etcd{embedded: srv, closing: closing, client: cli, log: cfg.Logger, quota: ec.QuotaBackendBytes}, nil
}

// advertisePeerURL records peerURL as the member's peer URL when the data
// dir still holds another (http:// from before the ports served TLS):
// etcd keeps a member's peer URLs in its data and ignores the configured
// ones on restart.
func advertisePeerURL(ctx context.Context, cli *clientv3.Client, srv *embed.Etcd, peerURL url.URL) error {
	id := uint64(srv.Server.MemberID())
	m := srv.Server.Cluster().Member(srv.Server.MemberID())
	if m != nil && len(m.PeerURLs) == 1 && m.PeerURLs[0] == peerURL.String() {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, defaultDialTimeout)
	defer cancel()
	if _, err := cli.MemberUpdate(ctx, id, []string{peerURL.String()}); err != nil {
		return fmt.Errorf("embedded etcd: update the member's peer URL to %s: %w", peerURL.String(), err)
	}
	return nil
}

func newClient(endpoints []string, tlsCfg *tls.Config) (*clientv3.Client, error) {
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   endpoints,
		DialTimeout: defaultDialTimeout,
		TLS:         tlsCfg,
		Logger:      zap.NewNop(),
	})
	if err != nil {
		return nil, fmt.Errorf("etcd client for %v: %w", endpoints, err)
	}
	return cli, nil
}

// waitHealthy retries a linearizable read until it succeeds or the
// timeout passes; clientv3 dials lazily, so this is the first contact.
func (e *Etcd) waitHealthy(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var lastErr error
	for {
		if lastErr = e.Healthy(ctx); lastErr == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not healthy after %s: %w", timeout, lastErr)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// Healthy reports whether etcd answers a linearizable read (what
// kube-apiserver's etcd health check does).
func (e *Etcd) Healthy(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	_, err := e.client.Get(ctx, defaultHealthCheckPrefix)
	return err
}

// Client returns the client to etcd, embedded or external.
func (e *Etcd) Client() *clientv3.Client { return e.client }

// Embedded reports whether this process runs the etcd server.
func (e *Etcd) Embedded() bool { return e.embedded != nil }

// Err reports a fatal error of the embedded server; for an external
// cluster it never fires.
func (e *Etcd) Err() <-chan error {
	if e.embedded == nil {
		return nil
	}
	return e.embedded.Err()
}

// Close closes the client and stops the embedded server, if any.
func (e *Etcd) Close() error {
	err := e.client.Close()
	if errors.Is(err, context.Canceled) {
		err = nil
	}
	if e.embedded != nil {
		e.closing.Store(true)
		e.embedded.Close()
		e.log.Info("embedded etcd stopped")
	}
	return err
}

func loopbackURL(scheme string, port int) url.URL {
	return url.URL{Scheme: scheme, Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(port))}
}
