package server

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/nodeagent/nodeagent/pkg/controlplane/etcd"
	"github.com/nodeagent/nodeagent/pkg/controlplane/pki"
)

// testEtcd is a real etcd member for the lease tests, closed at cleanup.
func testEtcd(t *testing.T) *etcd.Etcd {
	t.Helper()
	dir := t.TempDir()
	p, err := pki.EnsureEtcd(filepath.Join(dir, "pki"), pki.Options{})
	if err != nil {
		t.Fatal(err)
	}
	e, err := etcd.Start(t.Context(), etcd.Config{DataDir: filepath.Join(dir, "etcd"), ClientPort: freePort(t), PeerPort: freePort(t),
		Logger: slog.New(slog.NewTextHandler(t.Output(), nil))}.WithPKI(p))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// kubernetesIPs are default/kubernetes's endpoint addresses, from the
// Endpoints and the EndpointSlice, which must agree.
func kubernetesIPs(ctx context.Context, cs *fake.Clientset) ([]string, error) {
	ep, err := cs.CoreV1().Endpoints("default").Get(ctx, "kubernetes", metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	var ips []string
	for _, a := range ep.Subsets[0].Addresses {
		ips = append(ips, a.IP)
	}
	sl, err := cs.DiscoveryV1().EndpointSlices("default").Get(ctx, "kubernetes", metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	var slIPs []string
	for _, e := range sl.Endpoints {
		slIPs = append(slIPs, e.Addresses...)
	}
	if !slices.Equal(ips, slIPs) {
		return nil, fmt.Errorf("endpoints %v, slice %v", ips, slIPs)
	}
	return ips, nil
}

// As kube-apiserver's lease endpoint reconciler: default/kubernetes lists
// every live server; one that stops removes itself at once; one that
// dies drops out when its lease expires; the last one never erases them.
func TestServerLeasesReconcileKubernetesEndpoints(t *testing.T) {
	ctx := context.Background()
	e := testEtcd(t)
	cs := fake.NewClientset()
	// A's lease outlives the test; B's expires soon after its last renewal.
	leases, leasesB := serverLeases{cli: e.Client(), ttl: time.Minute}, serverLeases{cli: e.Client(), ttl: 2 * time.Second}
	log := slog.New(slog.NewTextHandler(t.Output(), nil))
	cfgA := Config{BindAddress: "192.0.2.4", SecurePort: 6443}
	cfgB := Config{BindAddress: "192.0.2.5", SecurePort: 6443}
	reported := map[string]bool{}
	reconcileBuiltin(ctx, cfgA, leases, cfgA.self(), cs, reported, log)
	if ips, err := kubernetesIPs(ctx, cs); err != nil || !slices.Equal(ips, []string{"192.0.2.4"}) {
		t.Fatalf("one server: %v %v", ips, err)
	}

	bCtx, stopB := context.WithCancel(ctx)
	bDone := make(chan error, 1)
	go func() { bDone <- runBuiltinEndpoints(bCtx, cfgB, leasesB, cs, log) }()
	waitFor(t, "both servers listed", func(ctx context.Context) (bool, string, error) {
		ips, err := kubernetesIPs(ctx, cs)
		return slices.Equal(ips, []string{"192.0.2.4", "192.0.2.5"}), fmt.Sprintf("%v %v", ips, err), nil
	})
	// B stops: its lease goes and the endpoints lose it at once.
	stopB()
	if err := <-bDone; err != nil {
		t.Fatal(err)
	}
	if ips, err := kubernetesIPs(ctx, cs); err != nil || !slices.Equal(ips, []string{"192.0.2.4"}) {
		t.Errorf("after B stopped: %v %v", ips, err)
	}

	// B dies without removing its lease: it drops out once the lease
	// expired, at A's next round.
	if err := leasesB.renew(ctx, cfgB.self()); err != nil {
		t.Fatal(err)
	}
	reconcileBuiltin(ctx, cfgA, leases, cfgA.self(), cs, reported, log)
	if ips, _ := kubernetesIPs(ctx, cs); len(ips) != 2 {
		t.Fatalf("B's lease not seen: %v", ips)
	}
	waitFor(t, "B's lease to expire", func(ctx context.Context) (bool, string, error) {
		live, err := leases.live(ctx)
		return err == nil && len(live) == 1, fmt.Sprintf("live %v %v", live, err), nil
	})
	reconcileBuiltin(ctx, cfgA, leases, cfgA.self(), cs, reported, log)
	if ips, err := kubernetesIPs(ctx, cs); err != nil || !slices.Equal(ips, []string{"192.0.2.4"}) {
		t.Errorf("after B's lease expired: %v %v", ips, err)
	}

	// The last server stopping leaves the endpoints as they are.
	if err := leases.remove(ctx, "192.0.2.4"); err != nil {
		t.Fatal(err)
	}
	reconcileBuiltin(ctx, Config{BindAddress: "127.0.0.1", SecurePort: 6443}, leases, serverLease{}, cs, reported, log)
	if ips, err := kubernetesIPs(ctx, cs); err != nil || !slices.Equal(ips, []string{"192.0.2.4"}) {
		t.Errorf("no live server: %v %v, want the last ones kept", ips, err)
	}
}
