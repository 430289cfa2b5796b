package proxy

import (
	"context"
	"errors"
	"fmt"
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
	cfg.OnSync = nil
	p, fake, _ := newFakeProxier(t, cfg)
	if _, err := p.Sync(context.Background(), services, eps); err != nil {
		t.Fatalf("full sync: %v", err)
	}
	return sortedDump(fake)
}

func checkEquivalent(t *testing.T, fake *knftables.Fake, cfg Config, services []*v1.Service, eps []*discoveryv1.EndpointSlice) {
	t.Helper()
	if got, want := sortedDump(fake), fullSyncDump(t, cfg, services, eps); got != want {
		t.Errorf("table after incremental syncs differs from a full sync:\n--- got\n%s\n--- want\n%s", got, want)
	}
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
	cfg := Config{ClusterCIDR: "10.244.0.0/16"}
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
		"delete chain ip nodeagent-proxy "+endpointChain(webPort, webEP2),
		"delete set ip nodeagent-proxy "+affinitySet(webPort, webEP2, time.Minute))
	mustNotContain(t, tx,
		"ns/other/", // the other service is untouched
		// so are the endpoint that stayed and its clients' affinity
		"chain ip nodeagent-proxy "+endpointChain(webPort, webEP1),
		"set ip nodeagent-proxy "+affinitySet(webPort, webEP1, time.Minute),
		externalChain(webPort),             // and the NodePort chain
		serviceIPsMap, serviceNodePortsMap, // and the map elements
		"chain ip nodeagent-proxy services", "masquerading") // and the fixed chains
	if fake.Table.Chains[endpointChain(webPort, webEP2)] != nil {
		t.Errorf("chain of the removed endpoint is still there")
	}
	checkEquivalent(t, fake, cfg, svcs, eps)

	// Nothing changed: nothing is sent.
	n := rec.count()
	if res, err := p.Sync(ctx, svcs, eps); err != nil || res.Operations != 0 || rec.count() != n {
		t.Errorf("unchanged sync: %+v, %v; %d transactions, want %d", res, err, rec.count(), n)
	}
}

func TestIncrementalServiceDeletion(t *testing.T) {
	cfg := Config{ClusterCIDR: "10.244.0.0/16"}
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
	for name := range fake.Table.Chains {
		if strings.Contains(name, "ns/web/") {
			t.Errorf("chain %s left", name)
		}
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
	checkEquivalent(t, fake, cfg, svcs[1:], eps[1:])
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
	if fake.Table.Chains[serviceChain(webPort)] != nil || fake.Table.Chains[externalChain(webPort)] != nil {
		t.Errorf("chains of a service without endpoints left")
	}
	checkEquivalent(t, fake, cfg, svcs, none)

	if _, err := p.Sync(ctx, svcs, eps); err != nil {
		t.Fatalf("Sync: %v", err)
	}
	if e := fake.Table.Maps[noEndpointServicesMap].FindElement("10.96.0.10", "tcp", "80"); e != nil {
		t.Errorf("reject element left: %v", e)
	}
	checkEquivalent(t, fake, cfg, svcs, eps)
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
	checkEquivalent(t, fake, cfg, svcs, eps)
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
	checkEquivalent(t, fake, cfg, svcs[1:], eps[1:])

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

	p2, err := New(Config{NFT: fake, Logger: discardLogger()})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if _, err := p2.Sync(ctx, svcs[1:], eps[1:]); err != nil {
		t.Fatalf("Sync: %v", err)
	}
	checkEquivalent(t, fake, cfg, svcs[1:], eps[1:])
}

// TestIncrementalMatchesFullSync drives one Proxier through random
// changes; after each, its table must equal a fresh full sync's.
func TestIncrementalMatchesFullSync(t *testing.T) {
	cfg := Config{ClusterCIDR: "10.244.0.0/16"}
	p, fake, _ := newFakeProxier(t, cfg)
	rng := rand.New(rand.NewPCG(1, 2))
	ctx := context.Background()
	for step := range 60 {
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
		if _, err := p.Sync(ctx, svcs, eps); err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		checkEquivalent(t, fake, cfg, svcs, eps)
		if t.Failed() {
			t.Fatalf("step %d", step)
		}
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
	checkEquivalent(t, fake, cfg, after, eps)
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
