package proxy

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/types"
	testingclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/knftables"
)

var otherPort = ServicePortName{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "other"}, Protocol: v1.ProtocolTCP}

// sortedDump is the fake's table with map elements in a fixed order (the
// fake keeps them in insertion order, which differs between a full and
// an incremental sync that reach the same state).
func sortedDump(fake *knftables.Fake) string {
	lines := strings.Split(strings.TrimSpace(fake.Dump()), "\n")
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}

// fullSyncDump is what a new Proxier writes for the same state: an
// incremental sync must leave the table exactly so.
func fullSyncDump(t *testing.T, cfg Config, services []*v1.Service, eps []*discoveryv1.EndpointSlice) string {
	t.Helper()
	cfg.OnSync, cfg.Metrics, cfg.Conntrack = nil, nil, nil
	p, fake, _ := newFakeProxier(t, cfg)
	if _, err := p.Sync(context.Background(), services, eps); err != nil {
		t.Fatalf("full sync: %v", err)
	}
	return sortedDump(fake)
}

// checkEquivalent compares the table p wrote with a fresh full sync's,
// leaving out the chains p holds as stale: emptied and no longer pointed
// to, they wait for a later sync to delete them (kernels before 6.2 do
// not allow it in the sync that dropped the references), and do nothing
// meanwhile. That they are indeed empty and unreferenced is checked.
func checkEquivalent(t *testing.T, p *Proxier, fake *knftables.Fake, cfg Config, services []*v1.Service, eps []*discoveryv1.EndpointSlice) {
	t.Helper()
	stale := staleChains(p)
	var lines []string
	for _, l := range strings.Split(sortedDump(fake), "\n") {
		name, ok := strings.CutPrefix(l, "add chain ip "+TableName+" ")
		if !ok || !slices.Contains(stale, name) {
			lines = append(lines, l)
		}
	}
	for _, name := range stale {
		c := fake.Table.Chains[name]
		if c == nil {
			t.Errorf("stale chain %s is not in the table", name)
			continue
		}
		if len(c.Rules) != 0 {
			t.Errorf("stale chain %s has rules: %v", name, c.Rules)
		}
		if by := referrer(fake.Table, name); by != "" {
			t.Errorf("stale chain %s is referenced by %s", name, by)
		}
	}
	if got, want := strings.Join(lines, "\n"), fullSyncDump(t, cfg, services, eps); got != want {
		t.Errorf("table after incremental syncs differs from a full sync:\n--- got\n%s\n--- want\n%s", got, want)
	}
}

// staleChains lists the chains p holds as stale, sorted.
func staleChains(p *Proxier) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Sorted(maps.Keys(p.stale))
}

func twoServices() ([]*v1.Service, []*discoveryv1.EndpointSlice) {
	return []*v1.Service{
			service("ns", "web", "10.96.0.10", []v1.ServicePort{tcpPort("http", 80)},
				withNodePort(30080), withAffinity(ptr.To[int32](60))),
			service("ns", "other", "10.96.0.20", []v1.ServicePort{tcpPort("", 80)}),
		}, []*discoveryv1.EndpointSlice{
			slice("ns", "web", "web-1", "http", 8080, ep("10.244.1.2"), ep("10.244.2.3")),
			slice("ns", "other", "other-1", "", 9090, ep("10.244.5.5")),
		}
}

func TestIncrementalEndpointChange(t *testing.T) {
	clk := newTestClock()
	cfg := Config{ClusterCIDR: "10.244.0.0/16", Clock: clk}
	p, fake, rec := newFakeProxier(t, cfg)
	ctx := context.Background()
	svcs, eps := twoServices()
	res, err := p.Sync(ctx, svcs, eps)
	if err != nil || !res.Full || len(res.Changed) != 2 {
		t.Fatalf("first sync: %+v, %v", res, err)
	}

	// 10.244.2.3 is replaced by 10.244.3.4; 10.244.1.2 stays.
	eps[0] = slice("ns", "web", "web-1", "http", 8080, ep("10.244.1.2"), ep("10.244.3.4"))
	res, err = p.Sync(ctx, svcs, eps)
	if err != nil {
		t.Fatalf("Sync: %v", err)
	}
	if res.Full || !slices.Equal(res.Changed, []ServicePortName{webPort}) || len(res.Removed) != 0 {
		t.Errorf("result %+v, want a partial sync of %s only", res, webPort)
	}
	newEP := Endpoint{IP: mustAddr("10.244.3.4"), Port: 8080}
	tx := rec.last()
	mustContain(t, tx,
		"flush chain ip nodeagent-proxy "+serviceChain(webPort),
		"add chain ip nodeagent-proxy "+endpointChain(webPort, newEP),
		"add set ip nodeagent-proxy "+affinitySet(webPort, newEP, time.Minute),
		// The gone endpoint's chain is emptied, not deleted (yet).
		"flush chain ip nodeagent-proxy "+endpointChain(webPort, webEP2),
		"delete set ip nodeagent-proxy "+affinitySet(webPort, webEP2, time.Minute))
	mustNotContain(t, tx,
		"delete chain",
		"ns/other/", // the other service is untouched
		// so are the endpoint that stayed and its clients' affinity
		"chain ip nodeagent-proxy "+endpointChain(webPort, webEP1),
		"set ip nodeagent-proxy "+affinitySet(webPort, webEP1, time.Minute),
		externalChain(webPort),             // and the NodePort chain
		serviceIPsMap, serviceNodePortsMap, // and the map elements
		"chain ip nodeagent-proxy services", "masquerading") // and the fixed chains
	if got := staleChains(p); !slices.Equal(got, []string{endpointChain(webPort, webEP2)}) {
		t.Errorf("stale chains %v, want the removed endpoint's", got)
	}
	checkEquivalent(t, p, fake, cfg, svcs, eps)

	// Nothing changed, and the stale chain is not due: nothing is sent.
	n := rec.count()
	clk.Step(staleChainDelay - time.Millisecond)
	if res, err := p.Sync(ctx, svcs, eps); err != nil || res.Operations != 0 || rec.count() != n {
		t.Errorf("unchanged sync: %+v, %v; %d transactions, want %d", res, err, rec.count(), n)
	}
	// A second after the change, a sync deletes it, alone.
	clk.Step(time.Millisecond)
	res, err = p.Sync(ctx, svcs, eps)
	if err != nil || res.Operations != 0 || res.DeletedChains != 1 || rec.count() != n+1 {
		t.Errorf("sync after the delay: %+v, %v; %d transactions, want %d", res, err, rec.count(), n+1)
	}
	mustContain(t, rec.last(), "delete chain ip nodeagent-proxy "+endpointChain(webPort, webEP2))
	if got, want := sortedDump(fake), fullSyncDump(t, cfg, svcs, eps); got != want {
		t.Errorf("table after the deletion differs from a full sync:\n--- got\n%s\n--- want\n%s", got, want)
	}
}

// Removing a service first empties its chains and drops the map elements
// that pointed to them; a sync at least staleChainDelay later deletes the
// chains, in a transaction of its own.
func TestIncrementalServiceDeletion(t *testing.T) {
	clk := newTestClock()
	cfg := Config{ClusterCIDR: "10.244.0.0/16", Clock: clk}
	p, fake, rec := newFakeProxier(t, cfg)
	ctx := context.Background()
	svcs, eps := twoServices()
	if _, err := p.Sync(ctx, svcs, eps); err != nil {
		t.Fatalf("Sync: %v", err)
	}
	res, err := p.Sync(ctx, svcs[1:], eps[1:])
	if err != nil || res.Full || !slices.Equal(res.Removed, []ServicePortName{webPort}) || len(res.Changed) != 0 {
		t.Fatalf("delete: %+v, %v", res, err)
	}
	webChains := []string{serviceChain(webPort), externalChain(webPort), endpointChain(webPort, webEP1),
		endpointChain(webPort, webEP2)}
	slices.Sort(webChains)
	tx := rec.last()
	for _, name := range webChains {
		mustContain(t, tx, "flush chain ip nodeagent-proxy "+name)
		if c := fake.Table.Chains[name]; c == nil || len(c.Rules) != 0 {
			t.Errorf("chain %s: %+v, want it there and empty", name, c)
		}
	}
	mustContain(t, tx, "delete element ip nodeagent-proxy service-ips { 10.96.0.10 . tcp . 80 }",
		"delete element ip nodeagent-proxy service-nodeports { tcp . 30080 }")
	mustNotContain(t, tx, "delete chain")
	if got := staleChains(p); !slices.Equal(got, webChains) {
		t.Errorf("stale chains %v, want %v", got, webChains)
	}
	if len(fake.Table.Sets) != 0 {
		t.Errorf("affinity sets left: %v", fake.Table.Sets)
	}
	if e := fake.Table.Maps[serviceIPsMap].FindElement("10.96.0.10", "tcp", "80"); e != nil {
		t.Errorf("service-ips element left: %v", e)
	}
	if e := fake.Table.Maps[serviceNodePortsMap].FindElement("tcp", "30080"); e != nil {
		t.Errorf("service-nodeports element left: %v", e)
	}
	mustNotContain(t, rec.last(), "ns/other")
	checkEquivalent(t, p, fake, cfg, svcs[1:], eps[1:])

	// Before the delay, the chains stay.
	clk.Step(staleChainDelay / 2)
	if res, err := p.Sync(ctx, svcs[1:], eps[1:]); err != nil || res.DeletedChains != 0 {
		t.Errorf("sync before the delay: %+v, %v", res, err)
	}
	for _, name := range webChains {
		if fake.Table.Chains[name] == nil {
			t.Errorf("chain %s deleted before the delay", name)
		}
	}
	// After it, they go, in a transaction of their own (the sync has
	// nothing else to do).
	clk.Step(staleChainDelay / 2)
	n := rec.count()
	res, err = p.Sync(ctx, svcs[1:], eps[1:])
	if err != nil || res.DeletedChains != len(webChains) || res.Operations != 0 || rec.count() != n+1 {
		t.Fatalf("sync after the delay: %+v, %v; %d transactions, want %d", res, err, rec.count(), n+1)
	}
	for _, name := range webChains {
		mustContain(t, rec.last(), "delete chain ip nodeagent-proxy "+name)
	}
	if got, want := sortedDump(fake), fullSyncDump(t, cfg, svcs[1:], eps[1:]); got != want {
		t.Errorf("table after the deletion differs from a full sync:\n--- got\n%s\n--- want\n%s", got, want)
	}
	if st := p.Stats(); st.StaleChains != 0 {
		t.Errorf("stats %+v, want no stale chains", st)
	}
}

func TestEndpointsGoneAndBack(t *testing.T) {
	cfg := Config{}
	p, fake, _ := newFakeProxier(t, cfg)
	ctx := context.Background()
	svcs, eps := twoServices()
	if _, err := p.Sync(ctx, svcs, eps); err != nil {
		t.Fatalf("Sync: %v", err)
	}
	// All of web's endpoints become not ready: rejected, nat objects gone.
	none := []*discoveryv1.EndpointSlice{slice("ns", "web", "web-1", "http", 8080, ep("10.244.1.2", "serving")), eps[1]}
	if _, err := p.Sync(ctx, svcs, none); err != nil {
		t.Fatalf("Sync: %v", err)
	}
	wantElement(t, fake, noEndpointServicesMap, "goto reject-chain", "10.96.0.10", "tcp", "80")
	wantElement(t, fake, noEndpointNodePortsMap, "goto reject-chain", "tcp", "30080")
	if st := staleChains(p); !slices.Contains(st, serviceChain(webPort)) || !slices.Contains(st, externalChain(webPort)) {
		t.Errorf("chains of a service without endpoints not stale: %v", st)
	}
	checkEquivalent(t, p, fake, cfg, svcs, none)

	if _, err := p.Sync(ctx, svcs, eps); err != nil {
		t.Fatalf("Sync: %v", err)
	}
	if e := fake.Table.Maps[noEndpointServicesMap].FindElement("10.96.0.10", "tcp", "80"); e != nil {
		t.Errorf("reject element left: %v", e)
	}
	checkEquivalent(t, p, fake, cfg, svcs, eps)
}

func TestAffinityTimeoutChangeReplacesSets(t *testing.T) {
	cfg := Config{}
	p, fake, _ := newFakeProxier(t, cfg)
	ctx := context.Background()
	svcs, eps := twoServices()
	if _, err := p.Sync(ctx, svcs, eps); err != nil {
		t.Fatalf("Sync: %v", err)
	}
	svcs[0] = svcs[0].DeepCopy()
	svcs[0].Spec.SessionAffinityConfig.ClientIP.TimeoutSeconds = ptr.To[int32](120)
	if _, err := p.Sync(ctx, svcs, eps); err != nil {
		t.Fatalf("Sync: %v", err)
	}
	if fake.Table.Sets[affinitySet(webPort, webEP1, time.Minute)] != nil ||
		fake.Table.Sets[affinitySet(webPort, webEP1, 2*time.Minute)] == nil {
		t.Errorf("affinity sets not replaced:\n%s", fake.Dump())
	}
	checkEquivalent(t, p, fake, cfg, svcs, eps)
}

func TestFailedSyncIsFollowedByFullSync(t *testing.T) {
	cfg := Config{}
	var results []SyncResult
	var errs []error
	cfg.OnSync = func(r SyncResult, err error) { results, errs = append(results, r), append(errs, err) }
	p, fake, rec := newFakeProxier(t, cfg)
	ctx := context.Background()
	svcs, eps := twoServices()
	if _, err := p.Sync(ctx, svcs, eps); err != nil {
		t.Fatalf("Sync: %v", err)
	}
	rec.fail = errors.New("nft failed")
	if _, err := p.Sync(ctx, svcs[1:], eps[1:]); err == nil {
		t.Fatalf("Sync did not report the failure")
	}
	res, err := p.Sync(ctx, svcs[1:], eps[1:])
	if err != nil || !res.Full {
		t.Fatalf("sync after failure: %+v, %v; want a full sync", res, err)
	}
	checkEquivalent(t, p, fake, cfg, svcs[1:], eps[1:])

	st := p.Stats()
	if st.Syncs != 3 || st.Failures != 1 || st.LastSync.IsZero() || st.LastFullSync.IsZero() {
		t.Errorf("stats %+v", st)
	}
	if len(results) != 3 || errs[0] != nil || errs[1] == nil || errs[2] != nil || !results[2].Full {
		t.Errorf("OnSync saw %+v, %v", results, errs)
	}
}

func TestPeriodicFullSync(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	p, _, _ := newFakeProxier(t, Config{Clock: clk, FullSyncPeriod: time.Hour})
	ctx := context.Background()
	svcs, eps := twoServices()
	for i, step := range []struct {
		advance time.Duration
		full    bool
	}{{0, true}, {time.Minute, false}, {time.Hour, true}, {time.Minute, false}} {
		clk.Step(step.advance)
		res, err := p.Sync(ctx, svcs, eps)
		if err != nil || res.Full != step.full {
			t.Errorf("sync %d: full=%v, %v; want full=%v", i, res.Full, err, step.full)
		}
	}
}

// A new Proxier (a restarted agent) finds the table of its predecessor:
// it keeps what is still wanted and deletes the rest.
func TestFullSyncRemovesLeftovers(t *testing.T) {
	cfg := Config{}
	p, fake, _ := newFakeProxier(t, cfg)
	ctx := context.Background()
	svcs, eps := twoServices()
	if _, err := p.Sync(ctx, svcs, eps); err != nil {
		t.Fatalf("Sync: %v", err)
	}
	tx := fake.NewTransaction()
	tx.Add(&knftables.Map{Name: "old-map", Type: "ipv4_addr : verdict"})
	tx.Add(&knftables.Chain{Name: "service-OLD-ns/gone/tcp/"})
	if err := fake.Run(ctx, tx); err != nil {
		t.Fatalf("seed leftovers: %v", err)
	}

	clk := newTestClock()
	p2, err := New(Config{NFT: &recordingNFT{Interface: fake, oldKernel: fake}, Logger: discardLogger(),
		Conntrack: &fakeConntrack{}, Clock: clk})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if _, err := p2.Sync(ctx, svcs[1:], eps[1:]); err != nil {
		t.Fatalf("Sync: %v", err)
	}
	// The unknown chains are emptied now (the maps just flushed may have
	// pointed to them) and deleted later.
	checkEquivalent(t, p2, fake, cfg, svcs[1:], eps[1:])
	if got := staleChains(p2); !slices.Contains(got, "service-OLD-ns/gone/tcp/") || !slices.Contains(got, serviceChain(webPort)) {
		t.Errorf("stale chains %v", got)
	}
	clk.Step(staleChainDelay)
	if _, err := p2.Sync(ctx, svcs[1:], eps[1:]); err != nil {
		t.Fatalf("Sync: %v", err)
	}
	if got, want := sortedDump(fake), fullSyncDump(t, cfg, svcs[1:], eps[1:]); got != want {
		t.Errorf("table after the deletion differs from a full sync:\n--- got\n%s\n--- want\n%s", got, want)
	}
}

// TestIncrementalMatchesFullSync drives one Proxier through random
// changes; after each, its table must equal a fresh full sync's.
//
// Chains that go are emptied and deleted by a later sync (the clock moves
// by 0 to 1.5 s between steps, so some are deleted, some are wanted again
// before, and some wait several steps); the comparison leaves them out
// and checks they are empty and unreferenced. The fake refuses, as old
// kernels do, to delete a chain something pointed to when the transaction
// began.
func TestIncrementalMatchesFullSync(t *testing.T) {
	clk := newTestClock()
	cfg := Config{ClusterCIDR: "10.244.0.0/16", Clock: clk}
	p, fake, _ := newFakeProxier(t, cfg)
	rng := rand.New(rand.NewPCG(1, 2))
	ctx := context.Background()
	deleted := 0
	for step := range 60 {
		clk.Step(time.Duration(rng.IntN(4)) * staleChainDelay / 2)
		var svcs []*v1.Service
		var eps []*discoveryv1.EndpointSlice
		for i := range 4 {
			if rng.IntN(5) == 0 {
				continue // service absent this step
			}
			name := fmt.Sprintf("svc%d", i)
			var opts []svcOpt
			if rng.IntN(2) == 0 {
				opts = append(opts, withNodePort(int32(30000+i)))
			}
			if rng.IntN(2) == 0 {
				opts = append(opts, withAffinity(ptr.To(int32(10*(1+rng.IntN(2))))))
			}
			svcs = append(svcs, service("ns", name, fmt.Sprintf("10.96.0.%d", 10+i),
				[]v1.ServicePort{tcpPort("p", 80)}, opts...))
			var list []discoveryv1.Endpoint
			for j := range 4 {
				switch rng.IntN(4) {
				case 0:
				case 1:
					list = append(list, ep(fmt.Sprintf("10.244.%d.%d", i, j), "serving", "terminating"))
				default:
					list = append(list, ep(fmt.Sprintf("10.244.%d.%d", i, j)))
				}
			}
			eps = append(eps, slice("ns", name, name+"-1", "p", 8080, list...))
		}
		res, err := p.Sync(ctx, svcs, eps)
		if err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		deleted += res.DeletedChains
		checkEquivalent(t, p, fake, cfg, svcs, eps)
		if t.Failed() {
			t.Fatalf("step %d", step)
		}
	}
	if deleted == 0 {
		t.Errorf("no stale chain was ever deleted")
	}
}

// Keys freed and taken by different ports in one sync: a service is
// replaced by another with its cluster IP and NodePort, and two services
// swap NodePorts.
func TestKeysChangeHandsInOneSync(t *testing.T) {
	cfg := Config{}
	p, fake, _ := newFakeProxier(t, cfg)
	ctx := context.Background()
	port := func() []v1.ServicePort { return []v1.ServicePort{tcpPort("", 80)} }
	before := []*v1.Service{
		service("ns", "a", "10.96.0.10", port(), withNodePort(30080)),
		service("ns", "x", "10.96.0.11", port(), withNodePort(30081)),
		service("ns", "y", "10.96.0.12", port(), withNodePort(30082)),
	}
	after := []*v1.Service{
		service("ns", "b", "10.96.0.10", port(), withNodePort(30080)),
		service("ns", "x", "10.96.0.11", port(), withNodePort(30082)),
		service("ns", "y", "10.96.0.12", port(), withNodePort(30081)),
	}
	var eps []*discoveryv1.EndpointSlice
	for _, n := range []string{"a", "b", "x", "y"} {
		eps = append(eps, slice("ns", n, n+"-1", "", 8080, ep("10.244.1.2")))
	}
	if _, err := p.Sync(ctx, before, eps); err != nil {
		t.Fatalf("Sync: %v", err)
	}
	res, err := p.Sync(ctx, after, eps)
	if err != nil || res.Full {
		t.Fatalf("Sync: %+v, %v", res, err)
	}
	checkEquivalent(t, p, fake, cfg, after, eps)
}

func TestCleanup(t *testing.T) {
	p, fake, _ := newFakeProxier(t, Config{})
	ctx := context.Background()
	svcs, eps := twoServices()
	if _, err := p.Sync(ctx, svcs, eps); err != nil {
		t.Fatalf("Sync: %v", err)
	}
	for i := range 2 { // the second finds no table, which is fine
		if err := Cleanup(ctx, fake); err != nil {
			t.Fatalf("Cleanup %d: %v", i, err)
		}
	}
	if fake.Table != nil {
		t.Errorf("table left:\n%s", fake.Dump())
	}
}
