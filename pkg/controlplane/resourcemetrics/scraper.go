package resourcemetrics

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
)

// Defaults, as metrics-server's.
const (
	// DefaultResolution is --metric-resolution.
	DefaultResolution = 15 * time.Second
	// DefaultTimeout is --kubelet-request-timeout.
	DefaultTimeout = 10 * time.Second
)

// Config configures New.
type Config struct {
	// Nodes lists the nodes to scrape now. Required.
	Nodes func(ctx context.Context) ([]*v1.Node, error)
	// Fetch opens a node's kubelet /metrics/resource. Required.
	Fetch func(ctx context.Context, node *v1.Node) (io.ReadCloser, error)
	// Resolution is the interval between scrapes (DefaultResolution).
	Resolution time.Duration
	// Timeout bounds one node's scrape (DefaultTimeout, at most 90% of
	// Resolution so that a cycle ends before the next).
	Timeout time.Duration
	Logger  *slog.Logger
}

// Scraper scrapes the nodes into its Storage every resolution.
type Scraper struct {
	cfg     Config
	log     *slog.Logger
	storage *Storage

	mu      sync.Mutex
	failing map[string]bool // nodes whose last scrape failed: log changes only
}

// New checks cfg and fills in the defaults.
func New(cfg Config) (*Scraper, error) {
	if cfg.Nodes == nil || cfg.Fetch == nil {
		return nil, errors.New("resourcemetrics: Nodes and Fetch are required")
	}
	if cfg.Resolution <= 0 {
		cfg.Resolution = DefaultResolution
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	cfg.Timeout = min(cfg.Timeout, cfg.Resolution*9/10)
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Scraper{cfg: cfg, log: cfg.Logger, storage: NewStorage(cfg.Resolution, cfg.Logger), failing: map[string]bool{}}, nil
}

// Storage holds what the scrapes found.
func (s *Scraper) Storage() *Storage { return s.storage }

// Run scrapes at once and then every resolution until ctx ends; it
// returns nil then.
func (s *Scraper) Run(ctx context.Context) error {
	t := time.NewTicker(s.cfg.Resolution)
	defer t.Stop()
	for {
		s.Scrape(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// Scrape reads every node concurrently and stores the points of those
// that answered.
func (s *Scraper) Scrape(ctx context.Context) {
	nodes, err := s.cfg.Nodes(ctx)
	if err != nil {
		if ctx.Err() == nil {
			s.log.Warn("resource metrics: listing nodes", "err", err)
		}
		return
	}
	s.forgetOthers(nodes)
	batches := make([]*Batch, len(nodes))
	var wg sync.WaitGroup
	for i, node := range nodes {
		wg.Go(func() { batches[i] = s.scrapeNode(ctx, node) })
	}
	wg.Wait()
	if ctx.Err() != nil {
		return // a cut-short cycle would forget every node
	}
	all := newBatch()
	for _, b := range batches {
		if b != nil {
			all.merge(b)
		}
	}
	s.storage.Store(all)
}

// scrapeNode returns the node's points, or nil when it did not answer.
func (s *Scraper) scrapeNode(ctx context.Context, node *v1.Node) *Batch {
	nodeCtx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	b, err := s.fetch(nodeCtx, node)
	if ctx.Err() == nil {
		s.noteResult(node.Name, err)
	}
	return b
}

func (s *Scraper) fetch(ctx context.Context, node *v1.Node) (*Batch, error) {
	scraped := time.Now()
	body, err := s.cfg.Fetch(ctx, node)
	if err != nil {
		return nil, fmt.Errorf("fetch: %w", err)
	}
	defer body.Close()
	return Decode(body, node.Name, scraped)
}

// noteResult logs when a node starts or stops failing, not every scrape:
// a node without an agent would otherwise log every resolution.
func (s *Scraper) noteResult(node string, err error) {
	s.mu.Lock()
	was := s.failing[node]
	s.failing[node] = err != nil
	s.mu.Unlock()
	switch {
	case err != nil && !was:
		s.log.Warn("resource metrics: scraping node failed; retrying every resolution", "node", node, "err", err)
	case err == nil && was:
		s.log.Info("resource metrics: scraping node works again", "node", node)
	}
}

// forgetOthers drops the failure state of nodes no longer listed.
func (s *Scraper) forgetOthers(nodes []*v1.Node) {
	listed := make(map[string]bool, len(nodes))
	for _, n := range nodes {
		listed[n.Name] = true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for name := range s.failing {
		if !listed[name] {
			delete(s.failing, name)
		}
	}
}
