package main

// The service proxy section: how long pkg/proxy takes from an endpoint
// change to the packet filter updated. A proxy.Proxier writes its table
// with the real nft binary (sigs.k8s.io/knftables) inside a network
// namespace the bench makes for itself, and is given proxyServices
// Services of proxyEndpoints ready endpoints each through Sync directly
// (no informers, no API server). It times the first (full) sync, then
// -proxy-changes syncs after one endpoint of one service changed each,
// a sync with nothing changed, one sync that undoes all the changes at
// once, and full syncs of the first sync's objects by a fresh Proxier on
// the existing table and into an empty one. Beside them, two floors: an
// nft transaction that only adds (add table) and one that also deletes
// (add and delete an empty chain), into the empty table and beside the
// full one. It needs root and nft, not containerd.
//
// The namespace: a goroutine locks itself to its OS thread and unshares
// that thread's network namespace; every nft the Proxier starts is forked
// from that thread (Sync runs there) and so works in the new namespace,
// never on the host's tables. At the end the table is deleted and the
// thread returns to the host's namespace, which frees the new one (a
// thread that cannot return ends with its goroutine). The host's `nft
// list tables` is compared before and after.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/knftables"

	"github.com/nodeagent/nodeagent/pkg/proxy"
)

var proxyChanges = flag.Int("proxy-changes", 50, "endpoint changes synced one at a time in the proxy section (3 to 300)")

const (
	proxyServices    = 100
	proxyEndpoints   = 10 // ready endpoints per service
	proxyFullReps    = 5  // full syncs of each kind after the incremental ones
	proxyFloorReps   = 10 // one-operation nft transactions for the floor
	proxyNamespace   = "bench-proxy"
	proxyClusterCIDR = "10.244.0.0/16"
	proxyNodePortN   = 4  // every 4th service is a NodePort service
	proxyAffinityN   = 5  // every 5th has ClientIP affinity
	proxyStride      = 37 // change c hits service (c*37)%100: 100 changes touch 100 services
	nftDebianPath    = "/usr/sbin/nft"
)

// changeKind is what one incremental change does to one service's slice.
type changeKind int

const (
	changeUnready changeKind = iota // a ready endpoint turns unready (and not serving)
	changeAdded                     // a new ready endpoint (a new pod IP)
	changeRemoved                   // an endpoint is removed from the slice
	numChangeKinds
)

func (k changeKind) String() string {
	return [...]string{"endpoint turned unready", "endpoint added (new pod IP)", "endpoint removed"}[k]
}

// proxySync is one timed Sync.
type proxySync struct {
	kind changeKind    // incremental syncs only
	wall time.Duration // the Sync call
	run  time.Duration // of which in knftables Run (the nft -f process)
	list time.Duration // and in ListAll (nft --json list table, full syncs)
	nfts int           // nft processes started
	res  proxy.SyncResult
}

type proxyResult struct {
	nftVersion, nftPath string
	netns, hostNetns    string
	nodePorts, affinity int // services of each kind
	both                int
	first               proxySync
	incremental         []proxySync
	deferred            proxySync // the sync deleting the chains emptied by the changes
	noChange            proxySync
	undo                proxySync   // all changes undone in one sync
	resync, fresh       []proxySync // full: new Proxier on the table; into an empty table
	floorEmpty          [2]nftFloor // into the empty table
	floorFull           [2]nftFloor // beside the full table
	verifiedChanged     string      // what the table held after the changes
	verified            string      // and after the undo (the first sync's objects)
	hostBefore          []string
	hostAfter           []string
	hostNote            string
	total               time.Duration
}

// staleChainWait is past the proxier's delay before it deletes emptied
// chains (1 s, as kube-proxy's).
const staleChainWait = 1100 * time.Millisecond

func runProxy(ctx context.Context, o options) error {
	begin := time.Now()
	if os.Geteuid() != 0 {
		return errors.New("needs root (a network namespace of its own, nft needs CAP_NET_ADMIN)")
	}
	nftPath, err := exec.LookPath("nft")
	if err != nil {
		return fmt.Errorf("needs the nft binary (%s, Debian package nftables) in PATH: %w", nftDebianPath, err)
	}
	r := &proxyResult{nftPath: nftPath}
	if r.hostBefore, err = nftTables(ctx, nftPath); err != nil {
		return fmt.Errorf("host nft list tables: %w", err)
	}
	r.hostNetns, _ = os.Readlink("/proc/self/ns/net")
	fmt.Printf("proxy: %d services x %d endpoints, %d changes, with %s in a network namespace of its own ...\n",
		proxyServices, proxyEndpoints, *proxyChanges, nftPath)

	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	err = inNewNetns(func() error { return measureProxy(ctx, r) })
	// The namespace is gone or going; the host's tables must be as before.
	if herr := checkHostTables(r); herr != nil {
		err = errors.Join(err, herr)
	}
	if err != nil {
		return err
	}
	r.total = time.Since(begin)
	printProxyReport(r)
	return nil
}

// inNewNetns runs fn on a goroutine locked to its OS thread in a new
// network namespace, then returns the thread to the original namespace.
// Only that goroutine runs on the thread, so fn and the processes it
// starts see the new namespace and nothing else in the program does.
func inNewNetns(fn func() error) error {
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			runtime.UnlockOSThread()
			done <- fmt.Errorf("open own network namespace: %w", err)
			return
		}
		defer orig.Close()
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			done <- fmt.Errorf("unshare network namespace: %w", err)
			return
		}
		err = fn()
		if serr := unix.Setns(int(orig.Fd()), unix.CLONE_NEWNET); serr != nil {
			// Stay locked: the runtime ends the thread with this
			// goroutine rather than reuse it in the wrong namespace.
			done <- errors.Join(err, fmt.Errorf("return to the original network namespace: %w", serr))
			return
		}
		runtime.UnlockOSThread()
		done <- err
	}()
	return <-done
}

// timedNFT times the calls of a sync that start nft processes.
type timedNFT struct {
	knftables.Interface
	run, list time.Duration
	calls     int
}

func (t *timedNFT) Run(ctx context.Context, tx *knftables.Transaction) error {
	defer t.time(&t.run, time.Now())
	return t.Interface.Run(ctx, tx)
}

func (t *timedNFT) ListAll(ctx context.Context) (map[string][]string, error) {
	defer t.time(&t.list, time.Now())
	return t.Interface.ListAll(ctx)
}

func (t *timedNFT) time(spent *time.Duration, start time.Time) {
	*spent += time.Since(start)
	t.calls++
}

// measureProxy runs in the new namespace (see inNewNetns).
func measureProxy(ctx context.Context, r *proxyResult) (err error) {
	r.netns, _ = os.Readlink("/proc/thread-self/ns/net")
	if r.netns == r.hostNetns {
		return fmt.Errorf("still in the host's network namespace %s", r.netns)
	}
	if tables, err := nftTables(ctx, r.nftPath); err != nil || len(tables) > 0 {
		return fmt.Errorf("new namespace: nft list tables: %v, %v (want none)", tables, err)
	}
	out, err := exec.CommandContext(ctx, r.nftPath, "--version").Output()
	if err != nil {
		return fmt.Errorf("nft --version: %w", err)
	}
	r.nftVersion = strings.TrimSpace(string(out))

	base, err := knftables.New(knftables.IPv4Family, proxy.TableName)
	if err != nil {
		return fmt.Errorf("knftables.New: %w", err)
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if cerr := proxy.Cleanup(cctx, base); cerr != nil {
			err = errors.Join(err, cerr)
		}
	}()
	nft := &timedNFT{Interface: base}
	newProxier := func() (*proxy.Proxier, error) {
		return proxy.New(proxy.Config{NFT: nft, ClusterCIDR: proxyClusterCIDR,
			Logger: slog.New(slog.DiscardHandler)})
	}
	timedSync := func(p *proxy.Proxier, svcs []*v1.Service, eps []*discoveryv1.EndpointSlice) (proxySync, error) {
		nft.run, nft.list, nft.calls = 0, 0, 0
		start := time.Now()
		res, err := p.Sync(ctx, svcs, eps)
		return proxySync{wall: time.Since(start), run: nft.run, list: nft.list, nfts: nft.calls, res: res}, err
	}
	// settle waits until the emptied chains are due and syncs, which
	// deletes them; it checks that none is left.
	settle := func(p *proxy.Proxier, svcs []*v1.Service, eps []*discoveryv1.EndpointSlice) (proxySync, error) {
		time.Sleep(staleChainWait)
		s, err := timedSync(p, svcs, eps)
		if err == nil && p.Stats().StaleChains != 0 {
			err = fmt.Errorf("%d stale chains left", p.Stats().StaleChains)
		}
		return s, err
	}

	if r.floorEmpty, err = measureFloors(ctx, base); err != nil {
		return err
	}
	if err := proxy.Cleanup(ctx, base); err != nil { // the floors made the table
		return err
	}
	svcs, eps := proxyObjects(r)
	orig := slices.Clone(eps) // changeEndpoint copies: these stay as they are
	p, err := newProxier()
	if err != nil {
		return err
	}
	if r.first, err = timedSync(p, svcs, eps); err != nil {
		return fmt.Errorf("first sync: %w", err)
	}
	if !r.first.res.Full || r.first.res.Endpoints != proxyServices*proxyEndpoints {
		return fmt.Errorf("first sync: full %v, %d endpoints, want a full sync of %d", r.first.res.Full,
			r.first.res.Endpoints, proxyServices*proxyEndpoints)
	}

	added := make([]int, proxyServices) // endpoints added per service so far
	touched := map[int]bool{}
	for c := range *proxyChanges {
		k := c * proxyStride % proxyServices
		touched[k] = true
		kind := changeKind(c % int(numChangeKinds))
		eps[k] = changeEndpoint(eps[k], kind, k, &added[k])
		s, err := timedSync(p, svcs, eps)
		if err != nil {
			return fmt.Errorf("incremental sync %d (%s of %s): %w", c, kind, svcs[k].Name, err)
		}
		if s.res.Full || len(s.res.Changed) != 1 || s.res.Changed[0].Name != svcs[k].Name || len(s.res.Removed) > 0 {
			return fmt.Errorf("incremental sync %d (%s of %s): full %v, changed %v, removed %v; want only that service",
				c, kind, svcs[k].Name, s.res.Full, s.res.Changed, s.res.Removed)
		}
		s.kind = kind
		r.incremental = append(r.incremental, s)
	}

	// Chains a change emptied are deleted by a later sync, once they have
	// been unreferenced for a while (kernels before 6.2 refuse sooner):
	// that sync, then one with nothing left to do.
	if r.deferred, err = settle(p, svcs, eps); err != nil {
		return fmt.Errorf("sync deleting stale chains: %w", err)
	}
	if r.noChange, err = timedSync(p, svcs, eps); err != nil {
		return fmt.Errorf("sync without changes: %w", err)
	}
	if r.noChange.res.Operations != 0 || r.noChange.nfts != 0 || len(r.noChange.res.Changed) != 0 {
		return fmt.Errorf("sync without changes: %d operations, %d nft runs, changed %v; want none",
			r.noChange.res.Operations, r.noChange.nfts, r.noChange.res.Changed)
	}
	// The table must hold what the changed objects want.
	if r.verifiedChanged, err = verifyTable(ctx, base, svcs, eps); err != nil {
		return fmt.Errorf("after the changes: %w", err)
	}
	if r.floorFull, err = measureFloors(ctx, base); err != nil {
		return err
	}

	eps = orig
	if r.undo, err = timedSync(p, svcs, eps); err != nil {
		return fmt.Errorf("sync undoing the changes: %w", err)
	}
	if r.undo.res.Full || len(r.undo.res.Changed) != len(touched) {
		return fmt.Errorf("sync undoing the changes: full %v, %d service ports changed; want %d",
			r.undo.res.Full, len(r.undo.res.Changed), len(touched))
	}
	if _, err := settle(p, svcs, eps); err != nil {
		return fmt.Errorf("sync deleting stale chains after the undo: %w", err)
	}
	if r.verified, err = verifyTable(ctx, base, svcs, eps); err != nil {
		return fmt.Errorf("after undoing the changes: %w", err)
	}

	for range proxyFullReps { // a restarted agent: a new Proxier, the table as left
		fp, err := newProxier()
		if err != nil {
			return err
		}
		s, err := timedSync(fp, svcs, eps)
		if err != nil || !s.res.Full {
			return fmt.Errorf("full resync by a new proxier: full %v, %v", s.res.Full, err)
		}
		r.resync = append(r.resync, s)
	}
	for range proxyFullReps {
		if err := proxy.Cleanup(ctx, base); err != nil {
			return err
		}
		fp, err := newProxier()
		if err != nil {
			return err
		}
		s, err := timedSync(fp, svcs, eps)
		if err != nil || !s.res.Full {
			return fmt.Errorf("full sync into an empty table: full %v, %v", s.res.Full, err)
		}
		r.fresh = append(r.fresh, s)
	}
	if _, err := verifyTable(ctx, base, svcs, eps); err != nil {
		return fmt.Errorf("after the full syncs: %w", err)
	}
	return nil
}

// nftFloor is a series of minimal transactions, ms each.
type nftFloor struct {
	what string
	ms   []float64
}

// measureFloors times minimal transactions through knftables, which
// leave the table as it was: what a sync pays at least for running nft,
// without and with a deletion in the transaction (every incremental sync
// deletes or flushes something).
func measureFloors(ctx context.Context, nft knftables.Interface) ([2]nftFloor, error) {
	floors := [2]nftFloor{{what: "adds only"}, {what: "with a deletion"}}
	for i := range floors {
		for range proxyFloorReps {
			tx := nft.NewTransaction()
			tx.Add(&knftables.Table{})
			if i == 1 {
				tx.Add(&knftables.Chain{Name: "bench-floor"})
				tx.Delete(&knftables.Chain{Name: "bench-floor"})
			}
			start := time.Now()
			if err := nft.Run(ctx, tx); err != nil {
				return floors, fmt.Errorf("floor transaction (%s): %w", floors[i].what, err)
			}
			floors[i].ms = append(floors[i].ms, ms(time.Since(start)))
		}
	}
	return floors, nil
}

// proxyObjects are the services and their slices: service i is
// bench-proxy/svc-NNN, cluster IP 10.96.1.(i+1), port "http" 80/TCP to
// 8080, endpoints 10.244.i.1-10; every proxyNodePortN-th is a NodePort
// service (30000+i) and every proxyAffinityN-th has ClientIP affinity
// (10800 s, the API default).
func proxyObjects(r *proxyResult) ([]*v1.Service, []*discoveryv1.EndpointSlice) {
	svcs := make([]*v1.Service, proxyServices)
	eps := make([]*discoveryv1.EndpointSlice, proxyServices)
	for i := range proxyServices {
		name := fmt.Sprintf("svc-%03d", i)
		ip := fmt.Sprintf("10.96.1.%d", i+1)
		s := &v1.Service{
			ObjectMeta: metav1.ObjectMeta{Namespace: proxyNamespace, Name: name},
			Spec: v1.ServiceSpec{
				Type:       v1.ServiceTypeClusterIP,
				ClusterIP:  ip,
				ClusterIPs: []string{ip},
				Selector:   map[string]string{"app": name},
				Ports: []v1.ServicePort{{Name: "http", Port: 80, Protocol: v1.ProtocolTCP,
					TargetPort: intstr.FromInt32(8080)}},
				SessionAffinity: v1.ServiceAffinityNone,
			},
		}
		np, aff := i%proxyNodePortN == 0, i%proxyAffinityN == 0
		if np {
			s.Spec.Type = v1.ServiceTypeNodePort
			s.Spec.Ports[0].NodePort = int32(30000 + i)
			r.nodePorts++
		}
		if aff {
			s.Spec.SessionAffinity = v1.ServiceAffinityClientIP
			s.Spec.SessionAffinityConfig = &v1.SessionAffinityConfig{
				ClientIP: &v1.ClientIPConfig{TimeoutSeconds: ptr.To(int32(v1.DefaultClientIPServiceAffinitySeconds))}}
			r.affinity++
		}
		if np && aff {
			r.both++
		}
		svcs[i] = s
		sl := &discoveryv1.EndpointSlice{
			ObjectMeta: metav1.ObjectMeta{Namespace: proxyNamespace, Name: name + "-bench",
				Labels: map[string]string{discoveryv1.LabelServiceName: name}},
			AddressType: discoveryv1.AddressTypeIPv4,
			Ports: []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To(int32(8080)),
				Protocol: ptr.To(v1.ProtocolTCP)}},
		}
		for j := range proxyEndpoints {
			sl.Endpoints = append(sl.Endpoints, readyEndpoint(fmt.Sprintf("10.244.%d.%d", i, j+1)))
		}
		eps[i] = sl
	}
	return svcs, eps
}

func readyEndpoint(ip string) discoveryv1.Endpoint {
	return discoveryv1.Endpoint{Addresses: []string{ip}, Conditions: discoveryv1.EndpointConditions{
		Ready: ptr.To(true), Serving: ptr.To(true), Terminating: ptr.To(false)}}
}

// changeEndpoint returns a copy of service k's slice with one endpoint
// changed, as the EndpointSlice controller would write it.
func changeEndpoint(sl *discoveryv1.EndpointSlice, kind changeKind, k int, added *int) *discoveryv1.EndpointSlice {
	sl = sl.DeepCopy()
	switch kind {
	case changeUnready:
		for i := range sl.Endpoints {
			if c := &sl.Endpoints[i].Conditions; *c.Ready {
				c.Ready, c.Serving = ptr.To(false), ptr.To(false)
				break
			}
		}
	case changeAdded:
		*added++
		sl.Endpoints = append(sl.Endpoints, readyEndpoint(fmt.Sprintf("10.244.%d.%d", k, proxyEndpoints+*added)))
	case changeRemoved:
		sl.Endpoints = sl.Endpoints[:len(sl.Endpoints)-1]
	}
	return sl
}

// verifyTable compares the table's chains, affinity sets and service-ips
// elements with what the objects want.
func verifyTable(ctx context.Context, nft knftables.Interface, svcs []*v1.Service, eps []*discoveryv1.EndpointSlice) (string, error) {
	var wantEP, wantAff, wantExt int
	ports := proxy.BuildServicePorts(svcs, eps)
	for _, sp := range ports {
		wantEP += len(sp.Endpoints)
		if sp.AffinityTimeout > 0 {
			wantAff += len(sp.Endpoints)
		}
		if sp.NodePort != 0 {
			wantExt++
		}
	}
	chains, err := nft.List(ctx, "chains")
	if err != nil {
		return "", fmt.Errorf("list chains: %w", err)
	}
	sets, err := nft.List(ctx, "sets")
	if err != nil {
		return "", fmt.Errorf("list sets: %w", err)
	}
	elems, err := nft.ListElements(ctx, "map", "service-ips")
	if err != nil {
		return "", fmt.Errorf("list map service-ips: %w", err)
	}
	// Per-port names hold a "/"; the fixed ones ("service-endpoints-check")
	// do not.
	count := func(names []string, prefix string) int {
		n := 0
		for _, s := range names {
			if strings.HasPrefix(s, prefix) && strings.Contains(s, "/") {
				n++
			}
		}
		return n
	}
	got := [4]int{count(chains, "service-"), count(chains, "endpoint-"), count(chains, "external-"), count(sets, "affinity-")}
	want := [4]int{len(ports), wantEP, wantExt, wantAff}
	desc := fmt.Sprintf("%d service chains, %d endpoint chains, %d external (NodePort) chains, %d affinity sets, %d service-ips elements",
		got[0], got[1], got[2], got[3], len(elems))
	if got != want || len(elems) != len(ports) {
		return "", fmt.Errorf("table %s holds %s; want %v and %d elements", proxy.TableName, desc, want, len(ports))
	}
	return desc, nil
}

// nftTables is `nft list tables`, one "family name" per table, sorted.
func nftTables(ctx context.Context, nftPath string) ([]string, error) {
	out, err := exec.CommandContext(ctx, nftPath, "list", "tables").CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("%w: %s", err, out)
	}
	var tables []string
	for _, l := range strings.Split(string(out), "\n") {
		if t, ok := strings.CutPrefix(strings.TrimSpace(l), "table "); ok {
			tables = append(tables, t)
		}
	}
	slices.Sort(tables)
	return tables, nil
}

// checkHostTables lists the host's tables again (this goroutine is not
// the namespace's). A change is an error if the host now holds the
// bench's objects, and reported otherwise: other programs (the agent's
// tests) may add and remove tables on the host meanwhile.
func checkHostTables(r *proxyResult) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var err error
	if r.hostAfter, err = nftTables(ctx, r.nftPath); err != nil {
		return fmt.Errorf("host nft list tables afterwards: %w", err)
	}
	if slices.Equal(r.hostBefore, r.hostAfter) {
		r.hostNote = "unchanged"
		return nil
	}
	ours := "ip " + proxy.TableName
	if slices.Contains(r.hostAfter, ours) {
		out, lerr := exec.CommandContext(ctx, r.nftPath, "list", "table", "ip", proxy.TableName).CombinedOutput()
		if lerr != nil {
			return fmt.Errorf("host nft list table %s: %w: %s", ours, lerr, out)
		}
		if strings.Contains(string(out), proxyNamespace+"/") {
			return fmt.Errorf("the host's table %s holds the bench's services: the rules did not stay in the namespace", ours)
		}
	}
	r.hostNote = fmt.Sprintf("CHANGED by another program (none holds the bench's services): before %v, after %v",
		r.hostBefore, r.hostAfter)
	return nil
}
