package proxy

import (
	"context"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	testingclock "k8s.io/utils/clock/testing"
	"sigs.k8s.io/knftables"
)

type syncEvent struct {
	res SyncResult
	err error
}

// waitSync returns the next sync that satisfies ok, failing the test on a
// sync error.
func waitSync(t *testing.T, syncs <-chan syncEvent, what string, ok func(SyncResult) bool) SyncResult {
	t.Helper()
	deadline := time.After(waitTimeout)
	for {
		select {
		case ev := <-syncs:
			if ev.err != nil {
				t.Fatalf("sync: %v", ev.err)
			}
			if ok(ev.res) {
				return ev.res
			}
		case <-deadline:
			t.Fatalf("no sync with %s", what)
		}
	}
}

// TestRunFollowsInformers runs the Proxier on informers of a fake
// clientset: the initial state, an endpoint change and a deletion each
// reach the (fake) table.
func TestRunFollowsInformers(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	svc := service("ns", "web", "10.96.0.10", []v1.ServicePort{tcpPort("http", 80)})
	sl := slice("ns", "web", "web-1", "http", 8080, ep("10.244.1.2"))
	client := fake.NewClientset(svc, sl)
	factory := informers.NewSharedInformerFactory(client, 0)

	syncs := make(chan syncEvent, 100)
	p, fakeNFT, _ := newFakeProxier(t, Config{
		Informers:     factory,
		MinSyncPeriod: -1,
		OnSync:        func(r SyncResult, err error) { syncs <- syncEvent{r, err} },
	})
	factory.Start(ctx.Done())
	defer func() {
		cancel()
		factory.Shutdown()
	}()
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()

	waitSync(t, syncs, "the initial state", func(r SyncResult) bool {
		return r.Full && r.ServicePorts == 1 && r.Endpoints == 1
	})
	wantElement(t, fakeNFT, serviceIPsMap, "goto "+serviceChain(webPort), "10.96.0.10", "tcp", "80")

	// The time from this update to the sync that applies it is what a
	// benchmark of "endpoint change -> rules applied" measures.
	sl = sl.DeepCopy()
	sl.Endpoints = append(sl.Endpoints, ep("10.244.2.3"))
	if _, err := client.DiscoveryV1().EndpointSlices("ns").Update(ctx, sl, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("update slice: %v", err)
	}
	res := waitSync(t, syncs, "the new endpoint", func(r SyncResult) bool { return r.Endpoints == 2 })
	if res.Full || !slices.Equal(res.Changed, []ServicePortName{webPort}) {
		t.Errorf("endpoint change synced as %+v", res)
	}
	if fakeNFT.Table.Chains[endpointChain(webPort, webEP2)] == nil {
		t.Errorf("no chain for the new endpoint:\n%s", fakeNFT.Dump())
	}

	if err := client.CoreV1().Services("ns").Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete service: %v", err)
	}
	waitSync(t, syncs, "the service removed", func(r SyncResult) bool { return len(r.Removed) == 1 })
	// Run deletes the chain a second later, maybe while this looks.
	if rules, ok := lockedChainRules(fakeNFT, serviceChain(webPort)); !ok || len(rules) != 0 {
		t.Errorf("service chain after deletion: %v, %v; want it there and emptied", rules, ok)
	}
	// Nothing changes any more, yet Run syncs once the emptied chains are
	// due, and deletes them.
	waitSync(t, syncs, "the stale chains deleted", func(r SyncResult) bool { return r.DeletedChains == 3 }) // the service's and its two endpoints'
	if c := fakeNFT.Table.Chains[serviceChain(webPort)]; c != nil {
		t.Errorf("service chain left after the delay")
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run: %v", err)
		}
	case <-time.After(waitTimeout):
		t.Fatal("Run did not return")
	}
	if st := p.Stats(); st.Syncs < 3 || st.Failures != 0 {
		t.Errorf("stats %+v", st)
	}
}

func TestRunNeedsInformers(t *testing.T) {
	p, _, _ := newFakeProxier(t, Config{})
	if err := p.Run(context.Background()); err == nil {
		t.Fatal("Run without informers did not fail")
	}
}

func TestNewRejectsBadClusterCIDR(t *testing.T) {
	for _, cidr := range []string{"10.244.0.0", "fd00::/64", "nonsense"} {
		if _, err := New(Config{NFT: &recordingNFT{}, ClusterCIDR: cidr}); err == nil {
			t.Errorf("cluster CIDR %q accepted", cidr)
		}
	}
	p, _, _ := newFakeProxier(t, Config{ClusterCIDR: "10.244.1.7/16"})
	if p.cfg.ClusterCIDR != "10.244.0.0/16" {
		t.Errorf("cluster CIDR not normalised: %s", p.cfg.ClusterCIDR)
	}
}

// TestRunDebounces checks that changes closer together than
// MinSyncPeriod are applied together, once the period has passed.
func TestRunDebounces(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	clk := testingclock.NewFakeClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	sl := slice("ns", "web", "web-1", "http", 8080, ep("10.244.1.2"))
	client := fake.NewClientset(service("ns", "web", "10.96.0.10", []v1.ServicePort{tcpPort("http", 80)}), sl)
	factory := informers.NewSharedInformerFactory(client, 0)
	// Updates seen by the informer, hence in the listers the sync reads.
	updates := make(chan struct{}, 10)
	_, _ = factory.Discovery().V1().EndpointSlices().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(any, any) { updates <- struct{}{} },
	})
	syncs := make(chan syncEvent, 100)
	arms := make(chan time.Duration, 100)
	p, _, _ := newFakeProxier(t, Config{
		Informers:     factory,
		Clock:         clk,
		MinSyncPeriod: time.Second,
		OnSync:        func(r SyncResult, err error) { syncs <- syncEvent{r, err} },
	})
	p.onArm = func(d time.Duration) { arms <- d }
	factory.Start(ctx.Done())
	defer func() {
		cancel()
		factory.Shutdown()
	}()
	go func() { _ = p.Run(ctx) }()

	wantArm(t, arms, 0)
	clk.Step(0)
	waitSync(t, syncs, "the initial state", func(r SyncResult) bool { return r.Endpoints == 1 })
	wantArm(t, arms, DefaultFullSyncPeriod)

	for _, ip := range []string{"10.244.2.3", "10.244.3.4"} {
		sl = sl.DeepCopy()
		sl.Endpoints = append(sl.Endpoints, ep(ip))
		if _, err := client.DiscoveryV1().EndpointSlices("ns").Update(ctx, sl, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("update slice: %v", err)
		}
		<-updates
	}
	// The first change arms the timer for the rest of the period (the
	// fake clock has not moved since the last sync); later ones wait.
	wantArm(t, arms, time.Second)
	select {
	case ev := <-syncs:
		t.Fatalf("synced before MinSyncPeriod passed: %+v", ev.res)
	default:
	}
	clk.Step(time.Second)
	res := waitSync(t, syncs, "both changes", func(SyncResult) bool { return true })
	if res.Endpoints != 3 {
		t.Errorf("first sync after the period has %d endpoints, want 3 (both changes)", res.Endpoints)
	}
}

// TestRunSchedulesStaleChainDeletion checks that Run syncs when emptied
// chains are due, though nothing changed.
func TestRunSchedulesStaleChainDeletion(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	clk := newTestClock()
	client := fake.NewClientset(service("ns", "web", "10.96.0.10", []v1.ServicePort{tcpPort("http", 80)}),
		slice("ns", "web", "web-1", "http", 8080, ep("10.244.1.2")))
	factory := informers.NewSharedInformerFactory(client, 0)
	syncs := make(chan syncEvent, 100)
	arms := make(chan time.Duration, 100)
	p, fakeNFT, _ := newFakeProxier(t, Config{
		Informers:     factory,
		Clock:         clk,
		MinSyncPeriod: -1,
		OnSync:        func(r SyncResult, err error) { syncs <- syncEvent{r, err} },
	})
	p.onArm = func(d time.Duration) { arms <- d }
	factory.Start(ctx.Done())
	defer func() {
		cancel()
		factory.Shutdown()
	}()
	go func() { _ = p.Run(ctx) }()

	wantArm(t, arms, 0)
	clk.Step(0)
	waitSync(t, syncs, "the initial state", func(r SyncResult) bool { return r.Endpoints == 1 })
	wantArm(t, arms, DefaultFullSyncPeriod)

	if err := client.DiscoveryV1().EndpointSlices("ns").Delete(ctx, "web-1", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete slice: %v", err)
	}
	wantArm(t, arms, 0)
	clk.Step(0)
	waitSync(t, syncs, "the endpoint gone", func(r SyncResult) bool { return r.Endpoints == 0 })
	wantArm(t, arms, staleChainDelay) // not the full sync period: the chains are due then
	clk.Step(staleChainDelay)
	waitSync(t, syncs, "the chains deleted", func(r SyncResult) bool { return r.DeletedChains == 2 })
	wantArm(t, arms, DefaultFullSyncPeriod)
	if c := fakeNFT.Table.Chains[serviceChain(webPort)]; c != nil {
		t.Errorf("service chain left")
	}
}

// lockedChainRules reads a chain of the fake as Run may be changing it.
func lockedChainRules(fake *knftables.Fake, name string) ([]string, bool) {
	fake.RLock()
	defer fake.RUnlock()
	c := fake.Table.Chains[name]
	if c == nil {
		return nil, false
	}
	var out []string
	for _, r := range c.Rules {
		out = append(out, r.Rule)
	}
	return out, true
}

// wantArm waits for the proxier to arm its timer, for want.
func wantArm(t *testing.T, arms <-chan time.Duration, want time.Duration) {
	t.Helper()
	select {
	case d := <-arms:
		if d != want {
			t.Fatalf("timer armed for %s, want %s", d, want)
		}
	case <-time.After(waitTimeout):
		t.Fatalf("timer not armed for %s", want)
	}
}
