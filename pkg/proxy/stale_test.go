package proxy

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/component-base/metrics"
	"sigs.k8s.io/knftables"
)

// A chain wanted again before its delay passed is written anew and not
// deleted.
func TestStaleChainWantedAgain(t *testing.T) {
	clk := newTestClock()
	cfg := Config{Clock: clk}
	p, fake, rec := newFakeProxier(t, cfg)
	ctx := context.Background()
	svcs, eps := twoServices()
	if _, err := p.Sync(ctx, svcs, eps); err != nil {
		t.Fatalf("Sync: %v", err)
	}
	// 10.244.2.3 goes...
	fewer := []*discoveryv1.EndpointSlice{slice("ns", "web", "web-1", "http", 8080, ep("10.244.1.2")), eps[1]}
	if _, err := p.Sync(ctx, svcs, fewer); err != nil {
		t.Fatalf("Sync: %v", err)
	}
	gone := endpointChain(webPort, webEP2)
	if !slices.Equal(staleChains(p), []string{gone}) {
		t.Fatalf("stale chains %v, want %s", staleChains(p), gone)
	}
	// ...and comes back once the chain is due: the sync writes it, the
	// deletion leaves it alone.
	clk.Step(staleChainDelay)
	res, err := p.Sync(ctx, svcs, eps)
	if err != nil || res.DeletedChains != 0 {
		t.Fatalf("Sync: %+v, %v", res, err)
	}
	mustNotContain(t, rec.last(), "delete chain")
	if len(staleChains(p)) != 0 {
		t.Errorf("stale chains %v, want none", staleChains(p))
	}
	wantRules(t, fake, gone, "ip saddr 10.244.2.3 jump mark-for-masquerade",
		"update @"+affinitySet(webPort, webEP2, time.Minute)+" { ip saddr }", "meta l4proto tcp dnat to 10.244.2.3:8080")
	checkEquivalent(t, p, fake, cfg, svcs, eps)
}

// A failed deletion (EBUSY: the kernel has not released the chain yet)
// fails neither the sync nor later ones: it is counted and retried after
// a growing delay.
func TestStaleChainDeletionRetried(t *testing.T) {
	clk := newTestClock()
	m := NewMetrics()
	reg := metrics.NewKubeRegistry()
	if err := m.Register(reg); err != nil {
		t.Fatalf("Register: %v", err)
	}
	cfg := Config{Clock: clk, Metrics: m}
	p, fake, rec := newFakeProxier(t, cfg)
	ctx := context.Background()
	svcs, eps := twoServices()
	for _, s := range [][]*discoveryv1.EndpointSlice{eps, eps[1:]} { // web loses its endpoints
		if _, err := p.Sync(ctx, svcs, s); err != nil {
			t.Fatalf("Sync: %v", err)
		}
	}
	stale := staleChains(p)
	if len(stale) != 4 {
		t.Fatalf("stale chains %v, want web's 4", stale)
	}

	busy := errors.New("device or resource busy")
	tries := []struct {
		advance time.Duration
		fail    bool
		deleted int
	}{
		{staleChainDelay, true, 0},                       // fails: retried in 1 s
		{staleChainDelay - time.Millisecond, false, 0},   // not yet
		{time.Millisecond, true, 0},                      // fails again: retried in 2 s
		{2*staleChainDelay - time.Millisecond, false, 0}, // not yet
		{time.Millisecond, false, 4},                     // done
	}
	for i, try := range tries {
		clk.Step(try.advance)
		n := rec.count()
		if try.fail {
			rec.fail = busy // the first transaction of the sync: the deletion
		}
		res, err := p.Sync(ctx, svcs, eps[1:])
		if err != nil || res.Full || res.DeletedChains != try.deleted {
			t.Fatalf("try %d: %+v, %v; want a partial sync deleting %d chains", i, res, err, try.deleted)
		}
		if tried := rec.count() - n; tried != btoi(try.fail || try.deleted > 0) {
			t.Errorf("try %d: %d transactions", i, tried)
		}
	}
	for _, name := range stale {
		if fake.Table.Chains[name] != nil {
			t.Errorf("chain %s left", name)
		}
	}
	if v := gathered(t, reg, "kubeproxy_sync_proxy_rules_nftables_cleanup_failures_total").GetCounter().GetValue(); v != 2 {
		t.Errorf("cleanup failures: %v, want 2", v)
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// A full sync after a failure finds the stale chains in the table again
// and keeps their due time; chains someone else deleted are forgotten.
func TestFullSyncKeepsStaleChains(t *testing.T) {
	clk := newTestClock()
	cfg := Config{Clock: clk}
	p, fake, rec := newFakeProxier(t, cfg)
	ctx := context.Background()
	svcs, eps := twoServices()
	for _, s := range [][]*discoveryv1.EndpointSlice{eps, eps[1:]} {
		if _, err := p.Sync(ctx, svcs, s); err != nil {
			t.Fatalf("Sync: %v", err)
		}
	}
	stale := staleChains(p)
	// Someone deletes one of them.
	tx := fake.NewTransaction()
	tx.Delete(&knftables.Chain{Name: stale[0]})
	if err := fake.Run(ctx, tx); err != nil {
		t.Fatalf("delete: %v", err)
	}
	rec.fail = errors.New("nft failed")
	if _, err := p.Sync(ctx, svcs[1:], eps[1:]); err == nil {
		t.Fatal("sync did not fail")
	}
	clk.Step(staleChainDelay / 2)
	res, err := p.Sync(ctx, svcs[1:], eps[1:])
	if err != nil || !res.Full {
		t.Fatalf("sync after the failure: %+v, %v", res, err)
	}
	if got := staleChains(p); !slices.Equal(got, stale[1:]) {
		t.Errorf("stale chains %v, want %v", got, stale[1:])
	}
	// Their delay counts from when they went stale, not from the full
	// sync.
	clk.Step(staleChainDelay / 2)
	if res, err := p.Sync(ctx, svcs[1:], eps[1:]); err != nil || res.DeletedChains != len(stale)-1 {
		t.Errorf("sync after the delay: %+v, %v", res, err)
	}
	checkEquivalent(t, p, fake, cfg, svcs[1:], eps[1:])
}
