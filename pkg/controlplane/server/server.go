package server

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	certutil "k8s.io/client-go/util/cert"

	"github.com/nodeagent/nodeagent/pkg/controlplane/apiserver"
	"github.com/nodeagent/nodeagent/pkg/controlplane/apiserver/inflight"
	"github.com/nodeagent/nodeagent/pkg/controlplane/apiserver/kubeletproxy"
	apimetrics "github.com/nodeagent/nodeagent/pkg/controlplane/apiserver/metrics"
	"github.com/nodeagent/nodeagent/pkg/controlplane/apiserver/tokens"
	"github.com/nodeagent/nodeagent/pkg/controlplane/controller"
	"github.com/nodeagent/nodeagent/pkg/controlplane/controller/certificates"
	"github.com/nodeagent/nodeagent/pkg/controlplane/etcd"
	"github.com/nodeagent/nodeagent/pkg/controlplane/pki"
	"github.com/nodeagent/nodeagent/pkg/controlplane/registry"
	"github.com/nodeagent/nodeagent/pkg/controlplane/scheduler"
	"github.com/nodeagent/nodeagent/pkg/crash"
)

// watchGrace is how long a graceful shutdown waits for requests before it
// cancels the rest (watches never end by themselves).
const watchGrace = time.Second

// Run runs the control plane until ctx ends or a component fails, then
// stops everything it started, in reverse order. It returns nil after a
// clean stop on ctx.
func Run(ctx context.Context, cfg Config) error {
	cfg.setDefaults()
	if err := cfg.validate(); err != nil {
		return err
	}
	log := cfg.Logger
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return fmt.Errorf("data dir: %w", err)
	}

	// 1. Certificates and the admin kubeconfig.
	p, err := pki.Ensure(filepath.Join(cfg.DataDir, "pki"), pki.Options{
		ExtraSANs: cfg.servingSANs(),
		Logger:    log.With("component", "pki"),
	})
	if err != nil {
		return fmt.Errorf("pki: %w", err)
	}
	if err := pki.WriteKubeconfig(cfg.kubeconfigPath(), cfg.LocalURL(), p.CAPEM, p.AdminCertPEM, p.AdminKeyPEM, pki.AdminUser); err != nil {
		return fmt.Errorf("admin kubeconfig: %w", err)
	}
	servingCert, err := p.ServingCertificate()
	if err != nil {
		return fmt.Errorf("serving certificate: %w", err)
	}
	staticTokens, err := loadTokenFile(filepath.Join(cfg.DataDir, TokenFile))
	if err != nil {
		return fmt.Errorf("token file: %w", err)
	}
	saKey, err := ensureServiceAccountKey(filepath.Join(cfg.DataDir, "pki"), log.With("component", "pki"))
	if err != nil {
		return fmt.Errorf("service account key: %w", err)
	}
	signer, err := tokens.NewSigner(saKey, tokens.DefaultServiceAccountIssuer)
	if err != nil {
		return fmt.Errorf("service account key: %w", err)
	}
	apiAudiences := []string{signer.Issuer()}
	saTokens := &saTokenAuthenticator{signer: signer, implicitAuds: apiAudiences}
	tokenAuthn := &tokenAuthenticator{static: staticTokens, sa: saTokens, apiAudiences: apiAudiences}

	kubeletCAs, err := cfg.kubeletCAs(p)
	if err != nil {
		return err
	}
	encryptionConfig, err := cfg.encryption(log)
	if err != nil {
		return err
	}

	// 2. etcd.
	etcdCfg, err := cfg.etcdConfig(log)
	if err != nil {
		return err
	}
	store, err := etcd.Start(ctx, etcdCfg)
	if err != nil {
		if ctx.Err() != nil {
			return nil // stopped while starting
		}
		return fmt.Errorf("etcd: %w", err)
	}
	defer func() {
		if err := store.Close(); err != nil {
			log.Warn("closing etcd", "err", err)
		}
	}()

	// 3. The API server; nothing is served before its caches are filled.
	// Components stop in reverse order: HTTP, then the API server (its own
	// context ends only after HTTP has stopped), then etcd (deferred above).
	// One registry for /metrics: the API server's and etcd's metrics, the
	// in-process scheduler's, the process and Go collectors.
	metricsRegistry := apimetrics.NewRegistry()
	api, err := apiserver.New(apiserver.Config{
		Registry:           registry.New(registry.Config{}),
		Etcd:               store.Client(),
		Encryption:         encryptionConfig,
		EventTTL:           cfg.eventTTL(),
		Logger:             log.With("component", "apiserver"),
		TokenSigner:        signer,
		TokenAuthenticator: tokenAuthn.authenticateToken,
		APIAudiences:       apiAudiences,
		Kubelet:            kubeletproxy.ClientConfig{CertPEM: p.KubeletClientCertPEM, KeyPEM: p.KubeletClientKeyPEM, RootCAs: kubeletCAs},
		Metrics:            metricsRegistry,
		MetricResolution:   cfg.MetricResolution,
		ServeHook:          cfg.APIServeHook,
	})
	if err != nil {
		return fmt.Errorf("apiserver: %w", err)
	}
	saTokens.lookup = api
	tokenAuthn.bootstrap = &bootstrapTokenAuthenticator{lookup: api, now: time.Now, log: log.With("component", "authn")}
	runCtx, cancelRun := context.WithCancel(ctx)
	defer cancelRun()
	g, gctx := errgroup.WithContext(runCtx)
	apiCtx, stopAPI := context.WithCancel(context.WithoutCancel(ctx))
	defer stopAPI()
	abort := func(err error) error { // before HTTP serves
		cancelRun()
		stopAPI()
		if werr := g.Wait(); werr != nil {
			return werr
		}
		return err
	}
	g.Go(func() error {
		select {
		case err := <-store.Err():
			return fmt.Errorf("embedded etcd: %w", err)
		case <-gctx.Done():
			return nil
		}
	})
	g.Go(func() error { store.WatchSpace(gctx, 0); return nil })
	g.Go(func() error {
		err := api.Run(apiCtx)
		switch {
		case apiCtx.Err() != nil:
			return nil
		case err == nil:
			return errors.New("apiserver stopped unexpectedly")
		}
		return fmt.Errorf("apiserver: %w", err)
	})
	select {
	case <-api.Ready():
	case <-gctx.Done():
		return abort(nil) // ctx ended (nil) or a component failed (its error)
	}

	// Clients of the secure port, each as upstream's component would be:
	// the scheduler as system:kube-scheduler, the controllers as their own
	// service accounts (runControllers), the cluster DNS as kube-dns; the
	// built-in endpoints are the API server's own writes (the admin).
	// The scheduler's client is faster: a binding and an event per pod
	// would hold it to 25 pods/s at the controllers' 50 QPS.
	adminClient, err := adminClientset(cfg, p, 50, 100)
	if err != nil {
		return abort(fmt.Errorf("admin client: %w", err))
	}
	schedConfig, err := componentConfig(cfg, p, SchedulerUser, 200, 400)
	if err != nil {
		return abort(err)
	}
	schedClient, err := kubernetes.NewForConfig(schedConfig)
	if err != nil {
		return abort(fmt.Errorf("scheduler client: %w", err))
	}
	// A scheduler per leadership term (Run runs once), counting in one set
	// of metrics.
	schedCfg := scheduler.Config{Client: schedClient, Logger: log.With("component", "scheduler"),
		Instruments: scheduler.NewInstruments(metricsRegistry)}
	if _, err := scheduler.New(schedCfg); err != nil {
		return abort(err)
	}
	runScheduler := func(ctx context.Context) error {
		sched, err := scheduler.New(schedCfg)
		if err != nil {
			return err
		}
		return sched.Run(ctx)
	}
	elect := newElector(cfg, log.With("component", "leaderelection"))

	// 4. The secure port: probes for anyone, the API behind authentication.
	// The policy hook gets its own client too: a few hundred reads and
	// writes on a first start would take seconds at 50 QPS.
	policyClient, err := adminClientset(cfg, p, 200, 400)
	if err != nil {
		return abort(fmt.Errorf("rbac client: %w", err))
	}
	rbacHook := bootstrapRolesHook(policyClient, log.With("component", "rbac"))
	health := &healthChecks{etcdHealth: store.Healthy, instrument: api.InstrumentPath, hooks: []*postStartHook{rbacHook}}
	mux := http.NewServeMux()
	health.register(mux)
	// As upstream's handler chain: authentication, the in-flight limit,
	// then the API (authorization first).
	limits := cfg.inflight()
	limits.OnReject = api.RecordTooManyRequests
	mux.Handle("/", authenticateWith(tokenAuthn, inflight.New(limits, api.Handler())))
	ln, err := net.Listen("tcp", cfg.listenAddr())
	if err != nil {
		return abort(fmt.Errorf("secure port: %w", err))
	}
	baseCtx, cancelRequests := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelRequests()
	// The timeouts and header bound are kube-apiserver's (secure_serving.go).
	srv := &http.Server{
		Handler:           crash.HTTP(crash.HTTPConfig{Component: "apiserver", Logger: log}, mux),
		ReadHeaderTimeout: 32 * time.Second, // just shy of upstream's 34s request timeout bound
		IdleTimeout:       90 * time.Second, // http.DefaultTransport's keep-alive
		MaxHeaderBytes:    1 << 20,
		BaseContext:       func(net.Listener) context.Context { return baseCtx },
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelDebug),
		TLSConfig: &tls.Config{
			MinVersion:   tls.VersionTLS12,
			Certificates: []tls.Certificate{servingCert},
			ClientAuth:   tls.VerifyClientCertIfGiven,
			ClientCAs:    p.CertPool(),
		},
	}
	g.Go(func() error {
		if err := srv.ServeTLS(ln, "", ""); !errors.Is(err, http.ErrServerClosed) {
			return fmt.Errorf("serve %s: %w", cfg.listenAddr(), err)
		}
		return nil
	})
	// Clients of the secure port stop before it closes, so that their last
	// bindings, status updates and events still reach it.
	var clients sync.WaitGroup
	runClient := func(run func() error) {
		clients.Add(1)
		g.Go(func() error { defer clients.Done(); return run() })
	}
	// The scheduler, the controllers and the DNS start once the bootstrap
	// policy is in, as kube-controller-manager waits for the API server's
	// /healthz: their identities have no rights before it.
	policyReady := make(chan struct{})
	afterPolicy := func(run func() error) {
		runClient(func() error {
			select {
			case <-policyReady:
			case <-gctx.Done():
				return nil
			}
			return run()
		})
	}
	afterPolicy(func() error { return elect.run(gctx, schedClient, "kube-scheduler", runScheduler) }) // nil when gctx ends
	afterPolicy(func() error { return runControllers(gctx, cfg, p, elect, log.With("component", "controllers")) })
	afterPolicy(func() error { return runClusterDNS(gctx, cfg, p, log.With("component", "dns")) })
	leases := serverLeases{cli: store.Client(), ttl: serverLeaseTTL}
	runClient(func() error {
		return runBuiltinEndpoints(gctx, cfg, leases, adminClient, log.With("component", "endpoints"))
	})
	g.Go(func() error {
		<-gctx.Done()
		waitBounded(&clients, cfg.ShutdownTimeout)
		shutdownHTTP(srv, cancelRequests, cfg.ShutdownTimeout, log)
		stopAPI()
		return nil
	})

	health.ready.Store(true)
	// Ready, as /readyz, once the post-start hooks finished.
	if err := runHook(gctx, rbacHook); err != nil {
		log.Error("control plane stopped", "err", err)
		cancelRun()
		_ = g.Wait()
		return err
	}
	if gctx.Err() != nil {
		return stopped(g, health, log)
	}
	close(policyReady)
	if cfg.Ready != nil {
		close(cfg.Ready)
	}
	log.Info("control plane ready", "url", cfg.LocalURL(), "listen", cfg.listenAddr(),
		"kubeconfig", cfg.kubeconfigPath(), "etcd", etcdMode(store))
	log.Info("use it with: kubectl --kubeconfig " + cfg.kubeconfigPath() + " get --raw /readyz")

	return stopped(g, health, log)
}

// stopped waits for the components once they are all started.
func stopped(g *errgroup.Group, health *healthChecks, log *slog.Logger) error {
	err := g.Wait()
	health.ready.Store(false)
	if err != nil {
		log.Error("control plane stopped", "err", err)
		return err
	}
	log.Info("control plane stopped")
	return nil
}

// shutdownHTTP stops accepting, lets short requests finish, then cancels
// the remaining ones (watches) and, past timeout, closes connections.
func shutdownHTTP(srv *http.Server, cancelRequests context.CancelFunc, timeout time.Duration, log *slog.Logger) {
	begin := time.Now()
	defer func() { log.Debug("HTTP server stopped", "took", time.Since(begin)) }()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- srv.Shutdown(ctx) }()
	var err error
	select {
	case err = <-done:
	case <-time.After(watchGrace):
		cancelRequests()
		err = <-done
	}
	cancelRequests()
	if err != nil {
		log.Warn("graceful HTTP shutdown timed out; closing connections", "err", err)
		_ = srv.Close()
	}
}

func etcdMode(e *etcd.Etcd) string {
	if e.Embedded() {
		return "embedded"
	}
	return "external"
}

// runControllers runs the controllers as kube-controller-manager with
// --use-service-account-credentials: the shared informers as
// system:kube-controller-manager, each controller as its service account
// in kube-system.
func runControllers(ctx context.Context, cfg Config, p *pki.PKI, elect elector, log *slog.Logger) error {
	kcm, err := controllerManagerConfig(cfg, p, 50, 100)
	if err != nil {
		return err
	}
	shared, err := kubernetes.NewForConfig(kcm)
	if err != nil {
		return fmt.Errorf("controller manager client: %w", err)
	}
	builder, err := newSAClientBuilder(ctx, kcm, log)
	if err != nil {
		return err
	}
	err = elect.run(ctx, shared, "kube-controller-manager", func(ctx context.Context) error {
		return controller.RunWithOptions(ctx, shared, log, controller.Options{
			NodeIPAM:     cfg.nodeIPAM(),
			RootCA:       p.CAPEM,
			Certificates: certificates.Config{ServingSigner: &p.KubeletServingCA, ClientSigner: &p.CA},
			ClientFor:    builder.client,
		})
	})
	if ctx.Err() != nil {
		return nil // stopping (a client's first request may have been cut short)
	}
	return err
}

// adminClientset is a client of the local secure port as the admin.
func adminClientset(cfg Config, p *pki.PKI, qps float32, burst int) (*kubernetes.Clientset, error) {
	return kubernetes.NewForConfig(&rest.Config{Host: cfg.LocalURL(), QPS: qps, Burst: burst,
		TLSClientConfig: rest.TLSClientConfig{CAData: p.CAPEM, CertData: p.AdminCertPEM, KeyData: p.AdminKeyPEM}})
}

// waitBounded waits for wg, at most d.
func waitBounded(wg *sync.WaitGroup, d time.Duration) {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(d):
	}
}

// kubeletCAs is the pool that verifies kubelets' serving certificates:
// by default the kubelet-serving CA, which signs the serving certificates
// agents request (and nothing else trusts); nil skips the verification.
func (c *Config) kubeletCAs(p *pki.PKI) (*x509.CertPool, error) {
	switch {
	case c.KubeletInsecureTLS:
		return nil, nil
	case c.KubeletCertificateAuthority == "":
		return p.KubeletServingCA.CertPool(), nil
	}
	pool, err := certutil.NewPool(c.KubeletCertificateAuthority)
	if err != nil {
		return nil, fmt.Errorf("kubelet certificate authority: %w", err)
	}
	return pool, nil
}
