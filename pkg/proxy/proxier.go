package proxy

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/client-go/informers"
	corelisters "k8s.io/client-go/listers/core/v1"
	discoverylisters "k8s.io/client-go/listers/discovery/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
	"sigs.k8s.io/knftables"
)

// Defaults (kube-proxy's).
const (
	// DefaultMinSyncPeriod is --min-sync-period: events closer together
	// than this are applied in one sync.
	DefaultMinSyncPeriod = time.Second
	// DefaultFullSyncPeriod is kube-proxy's hourly full resync, which
	// repairs whatever else changed the table.
	DefaultFullSyncPeriod = time.Hour
	// retryDelay is the wait after a failed sync when MinSyncPeriod is
	// shorter, so that a persistent failure does not spin.
	retryDelay = time.Second
)

// Config configures a Proxier.
type Config struct {
	// NFT is the table's interface. Default: knftables.New for the ip
	// family and TableName (needs the nft binary and CAP_NET_ADMIN).
	NFT knftables.Interface
	// ClusterCIDR is the pod network (IPv4). Traffic to a cluster IP from
	// outside it is masqueraded, so that replies come back through this
	// node. Empty: all traffic to cluster IPs is masqueraded (pods then
	// see the node, not the client, as the source).
	ClusterCIDR string
	// MinSyncPeriod is the least time between two syncs. 0 means
	// DefaultMinSyncPeriod; negative means none (tests).
	MinSyncPeriod time.Duration
	// FullSyncPeriod is how often the whole table is rewritten rather
	// than only what changed. Default: DefaultFullSyncPeriod.
	FullSyncPeriod time.Duration
	// Informers feeds Run; the Proxier registers its Service and
	// EndpointSlice informers in New. Not needed to call Sync directly.
	Informers informers.SharedInformerFactory
	// OnSync, if set, is called after every sync attempt (outside the
	// Proxier's lock): for metrics and for measuring how long a change
	// takes to reach the kernel.
	OnSync func(SyncResult, error)
	// Metrics, if set, records kube-proxy's sync metrics (see Metrics).
	Metrics *Metrics
	// Conntrack deletes the conntrack entries of UDP and SCTP flows whose
	// endpoint went away. Default: ctnetlink in the network namespace of
	// the thread that syncs (the host's, for the agent).
	Conntrack Conntrack
	Clock     clock.WithTicker // default: the real clock
	Logger    *slog.Logger     // default: slog.Default()
}

// SyncResult describes one sync.
type SyncResult struct {
	// Full is set when the whole table was rewritten.
	Full bool
	// ServicePorts and Endpoints count the desired state.
	ServicePorts, Endpoints int
	// Changed lists the service ports whose objects were (re)written
	// (all of them in a full sync); Removed those deleted. Sorted.
	Changed, Removed []ServicePortName
	// Operations is the size of the nft transaction.
	Operations int
	// DeletedChains counts the stale chains (emptied by an earlier sync)
	// deleted, in a transaction of their own, before the sync's.
	DeletedChains int
	// ConntrackDeleted counts the conntrack entries of stale UDP and SCTP
	// flows deleted after the rules were applied.
	ConntrackDeleted int
	// Start is when the sync began and Duration how long it took,
	// nft included.
	Start    time.Time
	Duration time.Duration
}

// Stats are counters for metrics.
type Stats struct {
	// Syncs counts sync attempts, Failures the failed ones.
	Syncs, Failures uint64
	// LastDuration is the duration of the last sync, LastSync when it
	// ended (successful or not) and LastFullSync when the last full sync
	// succeeded.
	LastDuration           time.Duration
	LastSync, LastFullSync time.Time
	// StaleChains counts the chains emptied and waiting to be deleted.
	StaleChains int
}

// portState is what the Proxier wrote for one service port.
type portState struct {
	port  ServicePort
	rules *portRules
}

// Proxier keeps the table in line with the services and endpoint slices
// it is given.
type Proxier struct {
	cfg      Config
	nft      knftables.Interface
	render   renderer
	log      *slog.Logger
	started  time.Time // slice changes made before are not timed
	triggers triggerLog
	services corelisters.ServiceLister
	slices   discoverylisters.EndpointSliceLister
	synced   []cache.InformerSynced
	// changed is a 1-slot notification: informer events only say
	// "something changed"; the sync reads the listers.
	changed chan struct{}
	// onArm, set by tests before Run, sees every (re)arming of Run's
	// timer.
	onArm func(time.Duration)

	mu sync.Mutex // serialises syncs and guards the fields below
	// written is what the last successful sync left in the table.
	written  map[ServicePortName]*portState
	needFull bool
	// recreated is set once base chains were recreated by this Proxier.
	recreated bool
	// stale maps the chains emptied by earlier syncs to when they may be
	// deleted (stale.go); staleBackoff is the wait after a failed
	// deletion.
	stale        map[string]time.Time
	staleBackoff time.Duration
	stats        Stats
}

// New checks cfg, fills its defaults and registers the informers.
func New(cfg Config) (*Proxier, error) {
	if cfg.ClusterCIDR != "" {
		pfx, err := netip.ParsePrefix(cfg.ClusterCIDR)
		if err != nil || !pfx.Addr().Is4() {
			return nil, fmt.Errorf("service proxy: cluster CIDR %q is not an IPv4 prefix", cfg.ClusterCIDR)
		}
		cfg.ClusterCIDR = pfx.Masked().String()
	}
	if cfg.MinSyncPeriod == 0 {
		cfg.MinSyncPeriod = DefaultMinSyncPeriod
	}
	if cfg.FullSyncPeriod <= 0 {
		cfg.FullSyncPeriod = DefaultFullSyncPeriod
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.NFT == nil {
		nft, err := knftables.New(knftables.IPv4Family, TableName)
		if err != nil {
			return nil, fmt.Errorf("service proxy: nftables: %w", err)
		}
		cfg.NFT = nft
	}
	if cfg.Conntrack == nil {
		cfg.Conntrack = newConntrack()
	}
	p := &Proxier{
		cfg:      cfg,
		nft:      cfg.NFT,
		render:   renderer{clusterCIDR: cfg.ClusterCIDR},
		log:      cfg.Logger.With("component", "proxy"),
		started:  cfg.Clock.Now(),
		changed:  make(chan struct{}, 1),
		written:  make(map[ServicePortName]*portState),
		needFull: true,
		stale:    make(map[string]time.Time),
	}
	if cfg.Informers != nil {
		p.watch(cfg.Informers)
	}
	return p, nil
}

// Stats returns the sync counters.
func (p *Proxier) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	st := p.stats
	st.StaleChains = len(p.stale)
	return st
}

// Sync brings the table in line with services and slices in one nft
// transaction: the whole table on the first sync, after a failure and
// every FullSyncPeriod; otherwise only the objects of service ports that
// changed since the last successful sync. Chains no longer wanted are
// emptied, and deleted by a sync at least a second later (stale.go).
// After the rules, the conntrack entries of UDP and SCTP flows whose
// endpoint went away are deleted.
func (p *Proxier) Sync(ctx context.Context, services []*v1.Service, slices []*discoveryv1.EndpointSlice) (SyncResult, error) {
	return p.syncObjects(ctx, services, slices, nil)
}

// syncObjects is Sync; triggers are the change times of the slice changes
// it applies (Run's), for the network programming latency.
func (p *Proxier) syncObjects(ctx context.Context, services []*v1.Service, slices []*discoveryv1.EndpointSlice,
	triggers []time.Time) (SyncResult, error) {
	res, err := p.sync(ctx, BuildServicePorts(services, slices))
	if err != nil {
		p.triggers.requeue(triggers)
	} else {
		p.cfg.Metrics.programmed(res.Start.Add(res.Duration), triggers)
	}
	if p.cfg.OnSync != nil {
		p.cfg.OnSync(res, err)
	}
	return res, err
}

func (p *Proxier) sync(ctx context.Context, desired []ServicePort) (res SyncResult, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	res = SyncResult{
		Start:        p.cfg.Clock.Now(),
		ServicePorts: len(desired),
		Endpoints:    countEndpoints(desired),
	}
	res.Full = p.needFull || res.Start.Sub(p.stats.LastFullSync) >= p.cfg.FullSyncPeriod
	defer func() {
		p.finish(&res, err)
	}()

	next, changes, flows := p.diff(desired, &res)
	p.deleteStaleChains(ctx, res.Start, changes, &res)
	tx := p.nft.NewTransaction()
	var existing map[string][]string
	if res.Full {
		// What the table holds besides what we know of: leftovers of an
		// earlier run, or of a sync whose outcome we do not know. A
		// missing table holds nothing.
		var lerr error
		if existing, lerr = p.nft.ListAll(ctx); lerr != nil && !knftables.IsNotFound(lerr) {
			return res, fmt.Errorf("list table %s: %w", TableName, lerr)
		}
		writeBase(tx, !p.recreated)
	}
	gone := writeChanges(tx, changes)
	if res.Full {
		gone = append(gone, removeUnknown(tx, existing, next)...)
	}
	res.Operations = tx.NumOperations()
	if res.Operations > 0 {
		if err := p.nft.Run(ctx, tx); err != nil {
			return res, fmt.Errorf("apply nftables transaction (%d operations): %w", res.Operations, err)
		}
	}
	p.written = next
	p.needFull = false
	p.recreated = true
	p.markStale(res.Start, gone, changes, res.Full)
	if res.Full {
		p.stats.LastFullSync = res.Start
	}
	res.ConntrackDeleted = p.clearStaleFlows(ctx, flows)
	return res, nil
}

// clearStaleFlows deletes the conntrack entries filters select, once the
// rules no longer send new flows their way. A failure is logged: the
// rules are right, only flows that outlived their endpoint remain.
func (p *Proxier) clearStaleFlows(ctx context.Context, filters []FlowFilter) int {
	if len(filters) == 0 {
		return 0
	}
	n, err := p.cfg.Conntrack.ClearFlows(ctx, filters)
	if err != nil {
		p.log.Warn("delete conntrack entries of stale UDP flows", "filters", len(filters), "deleted", n, "err", err)
	}
	return n
}

// diff compares desired with what was written: it returns the new
// written state, the changes to apply and the conntrack entries to delete
// then, and fills res's Changed and Removed. In a full sync every desired
// port is written from scratch.
func (p *Proxier) diff(desired []ServicePort, res *SyncResult) (map[ServicePortName]*portState, []portChange, []FlowFilter) {
	next := make(map[ServicePortName]*portState, len(desired))
	var changes []portChange
	var flows []FlowFilter
	for i := range desired {
		sp := &desired[i]
		old := p.written[sp.Name]
		if !res.Full && old != nil && old.port.equal(sp) {
			next[sp.Name] = old
			continue
		}
		var oldPort *ServicePort
		if old != nil {
			oldPort = &old.port
		}
		flows = append(flows, staleFlowFilters(oldPort, sp, res.Full)...)
		st := &portState{port: *sp, rules: p.render.render(sp)}
		next[sp.Name] = st
		res.Changed = append(res.Changed, sp.Name)
		c := portChange{cur: st.rules}
		if old != nil && !res.Full {
			c.old = old.rules
		}
		changes = append(changes, c)
	}
	for name := range p.written {
		if next[name] == nil {
			res.Removed = append(res.Removed, name)
		}
	}
	sortNames(res.Removed)
	for _, name := range res.Removed {
		flows = append(flows, staleFlowFilters(&p.written[name].port, nil, false)...)
		// A full sync finds removed ports' objects in the table listing.
		if !res.Full {
			changes = append(changes, portChange{old: p.written[name].rules})
		}
	}
	return next, changes, flows
}

// finish records the outcome of a sync; the caller holds p.mu.
func (p *Proxier) finish(res *SyncResult, err error) {
	now := p.cfg.Clock.Now()
	res.Duration = now.Sub(res.Start)
	p.cfg.Metrics.synced(res, now, err)
	p.stats.Syncs++
	p.stats.LastDuration = res.Duration
	p.stats.LastSync = now
	if err != nil {
		// What the kernel holds is unknown now: rewrite it all next time.
		p.needFull = true
		p.stats.Failures++
		p.log.Error("sync service proxy rules", "err", err, "full", res.Full, "duration", res.Duration)
		return
	}
	p.log.Info("synced service proxy rules", "full", res.Full, "servicePorts", res.ServicePorts,
		"endpoints", res.Endpoints, "changed", len(res.Changed), "removed", len(res.Removed),
		"operations", res.Operations, "deletedChains", res.DeletedChains, "staleChains", len(p.stale),
		"conntrackDeleted", res.ConntrackDeleted, "duration", res.Duration)
}

// removeUnknown deletes, in a full sync, what the table holds but the
// desired state does not, and returns the chains among it: those are
// only emptied (their rules may name the sets being deleted) and deleted
// later, as in writeChanges: the maps flushed in this transaction may
// have pointed to them.
func removeUnknown(tx *knftables.Transaction, existing map[string][]string, next map[ServicePortName]*portState) (chains []string) {
	keepChains := make(map[string]bool)
	keepSets := make(map[string]bool)
	for _, st := range next {
		for c := range st.rules.chains {
			keepChains[c] = true
		}
		for s := range st.rules.sets {
			keepSets[s] = true
		}
	}
	for _, c := range existing["chain"] {
		if !keepChains[c] && !isFixedChain(c) {
			chains = append(chains, c)
			tx.Flush(&knftables.Chain{Name: c})
		}
	}
	for _, m := range existing["map"] {
		if !isFixedMap(m) {
			tx.Delete(&knftables.Map{Name: m})
		}
	}
	for _, s := range existing["set"] {
		if !keepSets[s] {
			tx.Delete(&knftables.Set{Name: s})
		}
	}
	return chains
}

// Cleanup deletes the proxy's table, for a node that stops proxying.
func Cleanup(ctx context.Context, nft knftables.Interface) error {
	tx := nft.NewTransaction()
	tx.Delete(&knftables.Table{})
	if err := nft.Run(ctx, tx); err != nil && !knftables.IsNotFound(err) {
		return fmt.Errorf("delete table %s: %w", TableName, err)
	}
	return nil
}
