package apiserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/component-base/metrics"

	"github.com/nodeagent/nodeagent/pkg/controlplane/apiserver/admission"
	"github.com/nodeagent/nodeagent/pkg/controlplane/apiserver/authz"
	"github.com/nodeagent/nodeagent/pkg/controlplane/apiserver/kubeletproxy"
	apimetrics "github.com/nodeagent/nodeagent/pkg/controlplane/apiserver/metrics"
	"github.com/nodeagent/nodeagent/pkg/controlplane/apiserver/openapi"
	"github.com/nodeagent/nodeagent/pkg/controlplane/apiserver/request"
	"github.com/nodeagent/nodeagent/pkg/controlplane/apiserver/responsewriters"
	"github.com/nodeagent/nodeagent/pkg/controlplane/apiserver/tokens"
	"github.com/nodeagent/nodeagent/pkg/controlplane/registry"
	"github.com/nodeagent/nodeagent/pkg/controlplane/resourcemetrics"
	"github.com/nodeagent/nodeagent/pkg/controlplane/storage"
	"github.com/nodeagent/nodeagent/pkg/controlplane/storage/encryption"
	"github.com/nodeagent/nodeagent/pkg/crash"
)

// Version is what /version reports as the Kubernetes version served.
var Version = struct{ Major, Minor, GitVersion string }{"1", "37", "v1.37.2-nodeagent"}

// Config holds what the API server needs.
type Config struct {
	// Etcd stores every object, under Prefix (default "/registry").
	Etcd   *clientv3.Client
	Prefix string
	Logger *slog.Logger
	// EventTTL is how long etcd keeps an event after its last write
	// (kube-apiserver's --event-ttl); under a second keeps events forever.
	EventTTL time.Duration

	// TokenSigner issues service account tokens (serviceaccounts/token);
	// nil refuses TokenRequests.
	TokenSigner *tokens.Signer
	// TokenAuthenticator answers TokenReviews (the authentication in front
	// of the server, without client certificates); nil authenticates none.
	TokenAuthenticator tokens.AuthenticatorFunc
	// APIAudiences are the audiences the server accepts (kube-apiserver's
	// --api-audiences); they default to the TokenSigner's issuer.
	APIAudiences []string
	// Kubelet is how logs, exec, attach, port-forward, nodes/proxy and
	// the resource metrics scrapes reach the nodes' kubelet API.
	Kubelet kubeletproxy.ClientConfig
	// Metrics is the registry /metrics serves: New registers the request
	// and etcd metrics in it, and other in-process components (the
	// scheduler) may add theirs. Nil makes one (apimetrics.NewRegistry). One
	// registry serves one Server.
	Metrics metrics.KubeRegistry
	// MetricResolution is how often the nodes' resource metrics are
	// scraped for metrics.k8s.io (metrics-server's --metric-resolution;
	// zero means its default, 15s).
	MetricResolution time.Duration
	// Registry describes the served resources; nil makes one on the real
	// clock (registry.New).
	Registry *registry.Registry
	// Encryption encrypts the resources it covers at rest
	// (--encryption-provider-config); nil stores everything in plaintext.
	Encryption *encryption.Overrides

	// ServeHook, for tests only, runs before each authorized resource
	// request is served: a fault a test injects (a panic) hits the
	// request where a handler's bug would.
	ServeHook func(*http.Request)
}

// Keys of the resources the server itself uses.
const (
	nsResource = "/v1/namespaces"
	saResource = "/v1/serviceaccounts"
)

// Server is the API server's HTTP side. Authentication happens in front of
// it (the user is taken from the request context, see WithUser).
type Server struct {
	cfg       Config
	resources map[string]*registry.Resource // "<group>/<version>/<plural>"
	stores    map[*registry.Resource]*storage.Store
	ready     chan struct{}

	admission   *admission.Chain
	authorizers authz.Chain
	escalation  authz.Escalation
	openAPI     *openapi.Server
	kubelet     *kubeletproxy.Client

	requests       *apimetrics.Requests
	metricsHandler *apimetrics.Endpoint
	scraper        *resourcemetrics.Scraper // metrics.k8s.io

	purgeMu sync.Mutex
	purging map[string]bool
	ctx     context.Context // set by Run, for background work
}

// New builds the API server; Run starts its watch caches.
func New(cfg Config) (*Server, error) {
	if cfg.Etcd == nil {
		return nil, errors.New("apiserver: Etcd is required")
	}
	if cfg.Prefix == "" {
		cfg.Prefix = "/registry"
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Registry == nil {
		cfg.Registry = registry.New(registry.Config{})
	}
	limitJSONPatchCopies()
	s := &Server{
		cfg:       cfg,
		resources: map[string]*registry.Resource{},
		stores:    map[*registry.Resource]*storage.Store{},
		ready:     make(chan struct{}),
		purging:   map[string]bool{},
	}
	s.authorizers = authz.New(authz.Data{Pods: storeReaders{s}, Claims: storeReaders{s}, RBAC: storeReaders{s}})
	s.escalation = authz.Escalation{Authorizer: s.authorizers, Rules: s.authorizers.RBAC(),
		Resource: func(plural string) *registry.Resource { return cfg.Registry.Get(rbacv1.GroupName, "v1", plural) }}
	s.openAPI = openapi.New(cfg.Registry.All(), Version.GitVersion)
	var err error
	if s.admission, err = s.newAdmission(); err != nil {
		return nil, err
	}
	if s.kubelet, err = kubeletproxy.NewClient(cfg.Kubelet); err != nil {
		return nil, err
	}
	if s.scraper, err = s.newScraper(cfg.MetricResolution); err != nil {
		return nil, err
	}
	etcdMetrics := s.setUpMetrics()
	// Both event APIs share one lease per window, as upstream's single
	// event store does.
	eventLeases := storage.NewLeases(cfg.Etcd)
	for _, res := range cfg.Registry.ResourceMetrics() {
		s.resources[resourceKey(res.GVK.Group, res.GVK.Version, res.Plural)] = res
	}
	for _, res := range cfg.Registry.All() {
		s.resources[resourceKey(res.GVK.Group, res.GVK.Version, res.Plural)] = res
		if res.Virtual {
			continue
		}
		var ttl time.Duration
		if res.Plural == "events" && (res.GVK.Group == "" || res.GVK.Group == "events.k8s.io") {
			ttl = cfg.EventTTL
		}
		stored, conv := storedAs(res)
		st, err := storage.New(storage.Config{
			Client:     cfg.Etcd,
			Prefix:     cfg.Prefix,
			Resource:   groupResource(res),
			Namespaced: res.Namespaced,
			NewFunc:    res.New,
			Logger:     cfg.Logger.With("resource", res.Plural),
			Metrics:    etcdMetrics,
			// A nil *Overrides gives a nil Transformer: plaintext.
			Transformer: cfg.Encryption.For(stored),
			TTL:         ttl,
			Leases:      eventLeases,
			Stored:      conv,
		})
		if err != nil {
			return nil, fmt.Errorf("storage for %s: %w", res.Plural, err)
		}
		s.stores[res] = st
	}
	return s, nil
}

// setUpMetrics registers the request and etcd metrics, before the
// stores materialize theirs, and returns the etcd ones.
func (s *Server) setUpMetrics() *storage.Metrics {
	if s.cfg.Metrics == nil {
		s.cfg.Metrics = apimetrics.NewRegistry()
	}
	s.requests = apimetrics.NewRequests()
	s.requests.Register(s.cfg.Metrics)
	s.requests.LogRefusals(s.cfg.Logger)
	_ = crash.Register(s.cfg.Metrics) // process-wide: may be registered already
	etcd := storage.NewMetrics()
	etcd.Register(s.cfg.Metrics)
	s.metricsHandler = apimetrics.NewEndpoint(s.cfg.Metrics, s.authorizeMetrics)
	return etcd
}

func resourceKey(group, version, plural string) string { return group + "/" + version + "/" + plural }

func (s *Server) store(key string) *storage.Store { return s.stores[s.resources[key]] }

func newUID() types.UID { return uuid.NewUUID() }

// Run starts every resource's watch cache, creates the system namespaces
// and serves until ctx ends.
func (s *Server) Run(ctx context.Context) error {
	s.ctx = ctx
	errc := make(chan error, len(s.stores))
	for res, st := range s.stores {
		go func() {
			if err := st.Run(ctx); err != nil && ctx.Err() == nil {
				errc <- fmt.Errorf("watch cache %s: %w", res.Plural, err)
			}
		}()
	}
	for _, st := range s.stores {
		select {
		case <-st.Ready():
		case err := <-errc:
			return err
		case <-ctx.Done():
			return nil
		}
	}
	s.bootstrap(ctx)
	close(s.ready)
	// The resource metrics scrapes stop (and are waited for) when Run
	// returns, also on a watch cache's failure.
	var scraping sync.WaitGroup
	defer scraping.Wait()
	scrapeCtx, stopScraping := context.WithCancel(ctx)
	defer stopScraping()
	scraping.Go(func() { _ = s.scraper.Run(scrapeCtx) })
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
		return nil
	}
}

// Ready is closed once the caches are filled and the system namespaces exist.
func (s *Server) Ready() <-chan struct{} { return s.ready }

// Handler serves the API.
func (s *Server) Handler() http.Handler { return s.recovering(http.HandlerFunc(s.serveHTTP)) }

func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	if s.openAPI.Serve(w, r) || s.serveDiscovery(w, r) || s.metricsHandler.Serve(w, r) {
		return
	}
	ri, ok := parseRequest(r)
	if !ok {
		responsewriters.WriteError(w, responsewriters.NotFoundPath(r.URL.Path))
		return
	}
	res := s.resources[resourceKey(ri.Group, ri.Version, ri.Resource)]
	if res == nil || (ri.Subresource != "" && !hasSubresource(res, ri.Subresource)) {
		responsewriters.WriteError(w, responsewriters.NotFoundPath(r.URL.Path))
		return
	}
	labels := apimetrics.ResourceLabels(r, res.Namespaced, ri)
	s.requests.Instrument(w, r, res.Namespaced, ri, func(w http.ResponseWriter) {
		s.serveRecovered(w, r, labels, func(w http.ResponseWriter, r *http.Request) { s.serveResource(w, r, res, ri) })
	})
}

// parseRequest is what r's path and watch parameter mean.
func parseRequest(r *http.Request) (request.Info, bool) {
	watch := r.URL.Query().Get("watch")
	return request.ParseResourcePath(r.Method, r.URL.Path, watch == "true" || watch == "1")
}

// serveResource authorizes and serves a request for a known resource.
func (s *Server) serveResource(w http.ResponseWriter, r *http.Request, res *registry.Resource, ri request.Info) {
	if err := s.authorize(r, res, ri); err != nil {
		responsewriters.WriteError(w, err)
		return
	}
	select {
	case <-s.ready:
	default:
		responsewriters.WriteError(w, errNotReady)
		return
	}
	r = r.WithContext(request.WithWarnings(r.Context(), w.Header()))
	if s.cfg.ServeHook != nil {
		s.cfg.ServeHook(r)
	}
	if isResourceMetrics(res) {
		s.serveResourceMetrics(w, r, res, ri)
		return
	}
	h := &resourceHandler{s: s, res: res, st: s.stores[res], ri: ri}
	h.serve(w, r)
}

func hasSubresource(res *registry.Resource, sub string) bool {
	for _, s := range res.Subresources {
		if s == sub {
			return true
		}
	}
	return false
}
