package agent

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"os"
	goruntime "runtime"
	"strconv"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/nodeagent/nodeagent/pkg/agentconfig"
	"github.com/nodeagent/nodeagent/pkg/nodeapi"
)

// nodeAPIEnabled says whether the authenticated node API server runs:
// enableServer, and something to authorize with: an API server for the
// Webhook mode, or the AlwaysAllow mode (how a standalone agent opts in).
func nodeAPIEnabled(cfg *agentconfig.Config, joined bool) bool {
	if cfg.EnableServer != nil && !*cfg.EnableServer {
		return false
	}
	return joined || cfg.Authorization.Mode == agentconfig.AuthorizationModeAlwaysAllow
}

// startNodeAPI starts the node API server on address:port when enabled;
// the channel (nil when not started) reports how serving ended.
func startNodeAPI(ctx context.Context, o Options, p parts, health func() error) (<-chan error, error) {
	cfg := o.Config
	if !nodeAPIEnabled(cfg, p.rc != nil) {
		p.log.Info("node API server off: standalone agents need authorization.mode AlwaysAllow (and a client CA or anonymous authentication)")
		return nil, nil
	}
	var client kubernetes.Interface
	if p.api != nil {
		client = p.api.Objects.Client
	}
	authn, clientCAs, err := nodeAuthenticator(cfg, p.rc, client)
	if err != nil {
		return nil, err
	}
	profiling := cfg.EnableProfilingHandler == nil || *cfg.EnableProfilingHandler
	if profiling && cfg.EnableContentionProfiling {
		goruntime.SetBlockProfileRate(1) // as the kubelet: every blocking event
	}
	mon, err := monitoring(o, p)
	if err != nil {
		return nil, err
	}
	srv, err := nodeapi.New(nodeapi.Config{
		NodeName: p.nodeName, Pods: p.mgr, Runtime: p.rt, Health: health, Configz: cfg, Logger: p.log,
		Authenticator: authn, Authorizer: nodeAuthorizer(cfg, client), Monitoring: mon, Traces: p.traces,
		Profiling: profiling,
	})
	if err != nil {
		return nil, err
	}
	cert, err := nodeapi.ServingCertificate(nodeapi.CertConfig{
		CertFile: cfg.TLSCertFile, KeyFile: cfg.TLSPrivateKeyFile,
		Dir: certDir(o), Host: p.nodeName, IPs: ips(p.nodeIP),
	})
	if err != nil {
		return nil, err
	}
	getCert, err := servingCertSource(ctx, o, p, client, cert)
	if err != nil {
		return nil, err
	}
	addr := net.JoinHostPort(cfg.Address, strconv.Itoa(int(*cfg.Port)))
	_, done, err := nodeapi.Serve(ctx, addr, srv.Handler(), nodeapi.TLSConfigDynamic(getCert, clientCAs), p.log)
	return done, err
}

// servingCertSource picks the serving certificate: tlsCertFile when set,
// else with serverTLSBootstrap one requested from the cluster (the
// self-signed one until it is issued), else the self-signed one.
func servingCertSource(ctx context.Context, o Options, p parts, client kubernetes.Interface, cert tls.Certificate) (func(*tls.ClientHelloInfo) (*tls.Certificate, error), error) {
	cfg := o.Config
	if cfg.TLSCertFile != "" || client == nil || cfg.ServerTLSBootstrap == nil || !*cfg.ServerTLSBootstrap {
		return nodeapi.GetCertificate(nil, cert), nil
	}
	m, err := nodeapi.StartServingCertManager(nodeapi.BootstrapConfig{
		Client: client, NodeName: p.nodeName, IPs: ips(p.nodeIP), Dir: certDir(o),
	})
	if err != nil {
		return nil, err
	}
	context.AfterFunc(ctx, m.Stop)
	p.log.Info("serving certificate requested from the cluster (serverTLSBootstrap); self-signed until it is issued")
	return nodeapi.GetCertificate(m, cert), nil
}

// nodeAuthenticator builds the configured authenticators. Joined, client
// certificates are verified against the API server's CA unless
// clientCAFile names another, and tokens go to TokenReview.
func nodeAuthenticator(cfg *agentconfig.Config, rc *rest.Config, client kubernetes.Interface) (nodeapi.Authenticator, *x509.CertPool, error) {
	fallback, err := apiServerCA(rc)
	if err != nil {
		return nil, nil, err
	}
	pool, err := nodeapi.ClientCAPool(cfg.Authentication.X509.ClientCAFile, fallback)
	if err != nil {
		return nil, nil, err
	}
	ac := nodeapi.AuthnConfig{ClientCAs: pool, Anonymous: *cfg.Authentication.Anonymous.Enabled, CacheTTL: cfg.Authentication.Webhook.CacheTTL.Duration}
	if client != nil && *cfg.Authentication.Webhook.Enabled {
		ac.TokenReviews = client.AuthenticationV1().TokenReviews()
	}
	return nodeapi.NewAuthenticator(ac), pool, nil
}

func nodeAuthorizer(cfg *agentconfig.Config, client kubernetes.Interface) nodeapi.Authorizer {
	if cfg.Authorization.Mode == agentconfig.AuthorizationModeAlwaysAllow || client == nil {
		return nodeapi.AlwaysAllow()
	}
	w := cfg.Authorization.Webhook
	return nodeapi.NewWebhookAuthorizer(nodeapi.AuthzConfig{
		Reviews:       client.AuthorizationV1().SubjectAccessReviews(),
		AuthorizedTTL: w.CacheAuthorizedTTL.Duration, UnauthorizedTTL: w.CacheUnauthorizedTTL.Duration,
	})
}

// apiServerCA is the CA the kubeconfig trusts for the API server (nil
// standalone or when it trusts the system roots).
func apiServerCA(rc *rest.Config) ([]byte, error) {
	switch {
	case rc == nil:
		return nil, nil
	case rc.Transport != nil:
		if t, ok := rc.Transport.(interface{ CAData() []byte }); ok {
			return t.CAData(), nil // the rotating client certificate's transport
		}
	case len(rc.TLSClientConfig.CAData) > 0:
		return rc.TLSClientConfig.CAData, nil
	case rc.TLSClientConfig.CAFile != "":
		data, err := os.ReadFile(rc.TLSClientConfig.CAFile)
		if err != nil {
			return nil, fmt.Errorf("API server CA: %w", err)
		}
		return data, nil
	}
	return nil, nil
}

func ips(ip string) []net.IP {
	if parsed := net.ParseIP(ip); parsed != nil {
		return []net.IP{parsed}
	}
	return nil
}
