package main

// The scheduler throughput section: a fresh control plane in this process
// (cp.go) with -sched-nodes Node objects created through the API (Ready,
// allocatable 4 CPU, 16 GiB, 110 pods; no agent behind them), and
// -sched-pods pods created by apiClients clients at once. The node
// lifecycle controller marks a node Unknown and taints it once neither its
// Ready condition's heartbeat nor its Lease was renewed within the grace
// period (40 s), so the nodes start with a fresh heartbeat and the bench
// renews their Leases in kube-node-lease every schedLeaseRenew, as agents
// do. A watch of the namespace records when each pod is bound
// (spec.nodeName set). It needs neither root nor containerd.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math"
	"runtime"
	"slices"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

var (
	schedNodes = flag.Int("sched-nodes", 100, "nodes registered for the scheduler section")
	schedPods  = flag.Int("sched-pods", 1000, "pods scheduled in the scheduler section")
)

const (
	schedNamespace  = "bench-sched"
	schedLeaseSecs  = 40
	schedLeaseRenew = 10 * time.Second // the agent's lease renew interval
)

type schedResult struct {
	startup, total time.Duration
	nodes          int
	creates        apiCreates
	createsTook    time.Duration
	seen           map[string]apiSeen // pod name -> bound
	names          []string
	unhealthy      []string // nodes not Ready or tainted at the end
}

func runSched(ctx context.Context, o options) (err error) {
	begin := time.Now()
	fmt.Printf("scheduler: starting the control plane, %d nodes ...\n", *schedNodes)
	cp, err := startControlPlane(ctx, "nodeagent-bench-sched-")
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, cp.stop()) }()
	cs := cp.admin
	r := &schedResult{startup: cp.startup, nodes: *schedNodes}

	nodeNames := seriesNames("sched-node", *schedNodes)
	if err := createSchedNodes(ctx, cs, nodeNames, o.timeout); err != nil {
		return err
	}
	leaseCtx, stopLeases := context.WithCancel(ctx)
	leasesDone := make(chan error, 1)
	go func() { leasesDone <- renewLeases(leaseCtx, cs, nodeNames) }()
	defer func() {
		stopLeases()
		if lerr := <-leasesDone; lerr != nil && !errors.Is(lerr, context.Canceled) {
			err = errors.Join(err, fmt.Errorf("renew leases: %w", lerr))
		}
	}()
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: schedNamespace}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	trackCtx, stopTracking := context.WithCancel(ctx)
	defer stopTracking()
	tr, err := trackPods(trackCtx, cs, schedNamespace)
	if err != nil {
		return err
	}

	// One untimed pod: the scheduler's informers hold the nodes and it binds.
	if _, err := createPods(ctx, cs, schedNamespace, []*v1.Pod{apiPod("warm-up")}, 1, o.timeout); err != nil {
		return err
	}
	if _, err := tr.wait(ctx, []string{"warm-up"}, "bound", isBound, o.timeout); err != nil {
		return err
	}

	fmt.Printf("scheduler: %d pods from %d clients ...\n", *schedPods, apiClients)
	r.names = seriesNames("p", *schedPods)
	pods := make([]*v1.Pod, len(r.names))
	for i, n := range r.names {
		pods[i] = apiPod(n)
	}
	t := time.Now()
	r.creates, err = createPods(ctx, cs, schedNamespace, pods, apiClients, o.timeout)
	r.createsTook = time.Since(t)
	if err != nil {
		return err
	}
	if r.seen, err = tr.wait(ctx, r.names, "bound", isBound, o.timeout); err != nil {
		return err
	}
	if r.unhealthy, err = unhealthyNodes(ctx, cs); err != nil {
		return err
	}
	r.total = time.Since(begin)
	printSchedReport(r)
	return nil
}

// createSchedNodes registers the nodes as an agent would (status on
// create, a fresh Ready heartbeat) and gives each a Lease.
func createSchedNodes(ctx context.Context, cs kubernetes.Interface, names []string, timeout time.Duration) error {
	now := metav1.Now()
	renew := metav1.NewMicroTime(now.Time)
	capacity := v1.ResourceList{
		v1.ResourceCPU:    resource.MustParse("4"),
		v1.ResourceMemory: resource.MustParse("16Gi"),
		v1.ResourcePods:   resource.MustParse("110"),
	}
	_, err := apiParallelCtx(ctx, 10, len(names), timeout, func(ctx context.Context, i int) error {
		name := names[i]
		n := &v1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
				v1.LabelHostname: name, v1.LabelOSStable: "linux", v1.LabelArchStable: runtime.GOARCH,
			}},
			Status: v1.NodeStatus{
				Capacity:    capacity,
				Allocatable: capacity,
				Conditions: []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue, Reason: "KubeletReady",
					Message: "bench node", LastHeartbeatTime: now, LastTransitionTime: now}},
			},
		}
		node, err := cs.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("create node %s: %w", name, err)
		}
		holder, secs := name, int32(schedLeaseSecs)
		l := &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: v1.NamespaceNodeLease, OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "v1", Kind: "Node", Name: name, UID: node.UID,
			}}},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &secs, RenewTime: &renew},
		}
		if _, err := cs.CoordinationV1().Leases(v1.NamespaceNodeLease).Create(ctx, l, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create lease %s: %w", name, err)
		}
		return nil
	})
	return err
}

// renewLeases renews every node's Lease each schedLeaseRenew until ctx
// ends, as the agents would.
func renewLeases(ctx context.Context, cs kubernetes.Interface, names []string) error {
	t := time.NewTicker(schedLeaseRenew)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
		_, err := apiParallelCtx(ctx, 4, len(names), schedLeaseRenew, func(ctx context.Context, i int) error {
			leases := cs.CoordinationV1().Leases(v1.NamespaceNodeLease)
			l, err := leases.Get(ctx, names[i], metav1.GetOptions{})
			if err != nil {
				return err
			}
			now := metav1.NowMicro()
			l.Spec.RenewTime = &now
			_, err = leases.Update(ctx, l, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			return err
		}
	}
}

// unhealthyNodes names the nodes that are not Ready or carry a taint: the
// node lifecycle controller judged them silent during the run.
func unhealthyNodes(ctx context.Context, cs kubernetes.Interface) ([]string, error) {
	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	var bad []string
	for _, n := range nodes.Items {
		ready := slices.ContainsFunc(n.Status.Conditions, func(c v1.NodeCondition) bool {
			return c.Type == v1.NodeReady && c.Status == v1.ConditionTrue
		})
		if !ready || len(n.Spec.Taints) > 0 {
			bad = append(bad, n.Name)
		}
	}
	return bad, nil
}

// apiParallelCtx is apiParallel with its own timeout.
func apiParallelCtx(ctx context.Context, clients, n int, timeout time.Duration, op func(context.Context, int) error) (apiRun, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return apiParallel(ctx, clients, n, 0, op)
}

func printSchedReport(r *schedResult) {
	first, lastBound, firstBound := r.creates.sent[0], time.Time{}, time.Time{}
	lastCreated := r.creates.returned[0]
	lat := make([]float64, len(r.names))
	perNode := map[string]int{}
	for i, n := range r.names {
		s := r.seen[n]
		if r.creates.sent[i].Before(first) {
			first = r.creates.sent[i]
		}
		if r.creates.returned[i].After(lastCreated) {
			lastCreated = r.creates.returned[i]
		}
		if s.bound.After(lastBound) {
			lastBound = s.bound
		}
		if firstBound.IsZero() || s.bound.Before(firstBound) {
			firstBound = s.bound
		}
		lat[i] = ms(s.bound.Sub(r.creates.sent[i]))
		perNode[s.node]++
	}
	minPods, maxPods := math.MaxInt, 0
	for _, c := range perNode {
		minPods, maxPods = min(minPods, c), max(maxPods, c)
	}
	if len(perNode) < r.nodes {
		minPods = 0 // some node got none
	}
	makespan := lastBound.Sub(first)
	n := len(r.names)

	fmt.Println()
	fmt.Printf("scheduler throughput benchmark, %s\n", time.Now().UTC().Format("2006-01-02 15:04 MST"))
	fmt.Printf("machine:  nproc %d (%s), load average %s\n", runtime.NumCPU(), cpuModel(), loadAvg())
	fmt.Println("server:   pkg/controlplane/server in this process (scheduler and controllers included), embedded etcd")
	fmt.Printf("nodes:    %d Node objects through the API, Ready, allocatable 4 CPU / 16Gi / 110 pods, Leases renewed every %s; no agents\n",
		r.nodes, schedLeaseRenew)
	fmt.Printf("pods:     %d, one container requesting 10m CPU / 16Mi, created by %d clients at once (+1 untimed warm-up)\n", n, apiClients)
	fmt.Println("clock:    t0 = Create sent; bound = a watch of the namespace sees spec.nodeName set")
	fmt.Println()
	fmt.Printf("%-17s %-36s %5s %9s %9s   %s\n", "scheduler, ms", "", "n", "median", "p99", "")
	row := func(group, label string, xs []float64, extra string) {
		fmt.Printf("%-17s %-36s %5d %9.1f %9.1f   %s\n", group, label, len(xs), median(xs), percentile(xs, 0.99), extra)
	}
	row(fmt.Sprintf("%d pods", n), "per pod, Create sent -> bound", lat, "")
	row("", "makespan, first sent -> last bound", []float64{ms(makespan)},
		fmt.Sprintf("%.0f pods/s", float64(n)/makespan.Seconds()))
	row("", "creates, first sent -> last returned", []float64{ms(lastCreated.Sub(first))},
		fmt.Sprintf("%.0f creates/s", float64(n)/lastCreated.Sub(first).Seconds()))
	if span := lastBound.Sub(firstBound); n > 1 && span > 0 {
		row("", "bindings, first bound -> last bound", []float64{ms(span)},
			fmt.Sprintf("%.0f bindings/s", float64(n-1)/span.Seconds()))
	}
	fmt.Println("(p99 is nearest-rank: the maximum when n < 100)")
	fmt.Println()
	fmt.Printf("distribution: %d pods on %d of %d nodes, min %d max %d per node (even: %.1f)\n",
		n, len(perNode), r.nodes, minPods, maxPods, float64(n)/float64(r.nodes))
	fmt.Printf("node health at the end: %d of %d Ready and untainted", r.nodes-len(r.unhealthy), r.nodes)
	if len(r.unhealthy) > 0 {
		fmt.Printf(" (NOT: %v)", r.unhealthy)
	}
	fmt.Println()
	fmt.Printf("section time %.1f s: server start %.1f s, creates %.1f s\n", r.total.Seconds(), r.startup.Seconds(), r.createsTook.Seconds())
}
