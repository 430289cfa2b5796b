package network

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/nodeagent/nodeagent/pkg/crash"
)

// kubenetResync re-applies the configuration and routes even without a
// Node change: a route someone deleted by hand comes back.
const kubenetResync = time.Minute

// syncTimeout bounds one sync (plugin validation execs the plugins).
const syncTimeout = 30 * time.Second

// KubenetConfig configures Kubenet.
type KubenetConfig struct {
	Client   kubernetes.Interface
	NodeName string
	Writer   *ConfigWriter
	Routes   *Routes
	// ClusterCIDRs are the pods' ranges (the agent's --cluster-cidr),
	// when known: another node's pod CIDR outside them is neither routed
	// nor exempt from masquerade (RoutePolicy).
	ClusterCIDRs []string
	// Masquerade, when set, NATs pod traffic leaving the cluster (the
	// CNI configuration then must not: IPMasq false).
	Masquerade *Masquerade
	Logger     *slog.Logger
	// OnChange, when set, is called after the first sync and whenever
	// the network becomes ready or stops being ready, or the configuration
	// is written or lost: the node status is then sent without waiting for
	// its period, and pods that wait for the network start.
	OnChange func()
}

// Kubenet owns the node's pod network, as the kubelet's old kubenet
// plugin: it watches every Node, writes the CNI configuration for its own
// Node's pod CIDRs and keeps routes to the others' (host-gw). Condition
// reports the outcome as the NetworkUnavailable node condition.
type Kubenet struct {
	cfg            KubenetConfig
	policy         RoutePolicy
	nodes          corelisters.NodeLister
	factory        informers.SharedInformerFactory
	informerSynced cache.InformerSynced
	kick           chan struct{}
	// sync's own: what it last logged as refused, and whether the
	// network was ready at its last run.
	lastRefused string
	wasReady    bool
	wasWritten  bool

	mu       sync.Mutex
	routeErr error
	synced   bool // a sync reached the routes: Condition has something to say
}

// NewKubenet builds the Node informer; Run starts it.
func NewKubenet(cfg KubenetConfig) (*Kubenet, error) {
	if cfg.Client == nil || cfg.NodeName == "" || cfg.Writer == nil || cfg.Routes == nil {
		return nil, errors.New("network: kubenet needs Client, NodeName, Writer and Routes")
	}
	var policy RoutePolicy
	for _, c := range cfg.ClusterCIDRs {
		_, n, err := net.ParseCIDR(c)
		if err != nil {
			return nil, fmt.Errorf("network: kubenet cluster CIDR: %w", err)
		}
		policy.ClusterCIDRs = append(policy.ClusterCIDRs, n)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	f := informers.NewSharedInformerFactory(cfg.Client, kubenetResync)
	inf := f.Core().V1().Nodes()
	k := &Kubenet{cfg: cfg, policy: policy, nodes: inf.Lister(), factory: f, informerSynced: inf.Informer().HasSynced,
		kick: make(chan struct{}, 1)}
	_, _ = inf.Informer().AddEventHandler(crash.EventHandler(cfg.Logger, "agent", cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { k.trigger() },
		UpdateFunc: func(old, cur any) { k.nodeUpdated(old, cur) },
		DeleteFunc: func(any) { k.trigger() },
	}))
	return k, nil
}

// nodeUpdated skips the heartbeats: only pod CIDRs, addresses and
// deletion change the plan (the resync still comes through).
func (k *Kubenet) nodeUpdated(old, cur any) {
	o, ok1 := old.(*v1.Node)
	n, ok2 := cur.(*v1.Node)
	if ok1 && ok2 && o.ResourceVersion != n.ResourceVersion && !planInputsChanged(o, n) {
		return
	}
	k.trigger()
}

func planInputsChanged(o, n *v1.Node) bool {
	if (o.DeletionTimestamp == nil) != (n.DeletionTimestamp == nil) || o.Spec.PodCIDR != n.Spec.PodCIDR ||
		fmt.Sprint(o.Spec.PodCIDRs) != fmt.Sprint(n.Spec.PodCIDRs) {
		return true
	}
	return fmt.Sprint(o.Status.Addresses) != fmt.Sprint(n.Status.Addresses)
}

func (k *Kubenet) trigger() {
	select {
	case k.kick <- struct{}{}:
	default:
	}
}

// Run syncs on every relevant Node change until ctx ends. It closes
// Routes when it returns.
func (k *Kubenet) Run(ctx context.Context) error {
	defer k.cfg.Routes.Close()
	k.factory.Start(ctx.Done())
	defer k.factory.Shutdown()
	if !cache.WaitForCacheSync(ctx.Done(), k.informerSynced) {
		return nil
	}
	for {
		k.sync(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-k.kick:
		}
	}
}

func (k *Kubenet) sync(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, syncTimeout)
	defer cancel()
	self, err := k.nodes.Get(k.cfg.NodeName)
	if err != nil {
		return // not registered yet: its Add brings us back
	}
	cidrs := podCIDRs(self)
	if _, err := k.cfg.Writer.Sync(ctx, cidrs); err != nil {
		k.cfg.Logger.Error("pod network configuration", "err", err)
	} else if len(cidrs) > 0 { // the configuration is written for them
		if err := ClearBridgeAddresses(k.cfg.Writer.Bridge(), cidrs); err != nil {
			k.cfg.Logger.Error("stale addresses on the pod bridge", "err", err)
		}
	}
	all, err := k.nodes.List(labels.Everything())
	if err != nil {
		return
	}
	plan, refused := PlanRoutes(k.cfg.NodeName, all, k.policy)
	k.logRefused(refused)
	routeErr := k.cfg.Routes.Apply(ctx, plan)
	if routeErr != nil {
		k.cfg.Logger.Error("routes to other nodes' pod CIDRs", "err", routeErr)
	}
	if k.cfg.Masquerade != nil {
		src, dst := MasqueradePlan(cidrs, plan)
		if err := k.cfg.Masquerade.Apply(ctx, src, dst); err != nil {
			k.cfg.Logger.Error("masquerade rules", "err", err)
			routeErr = errors.Join(routeErr, fmt.Errorf("masquerade rules: %w", err))
		}
	}
	k.mu.Lock()
	first := !k.synced
	k.routeErr, k.synced = routeErr, true
	k.mu.Unlock()
	ready, _, _ := k.status()
	written, _, _ := k.cfg.Writer.Status()
	changed := ready != k.wasReady || written != k.wasWritten
	k.wasReady, k.wasWritten = ready, written
	if ready && changed {
		k.cfg.Logger.Info("pod network ready", "routes", len(plan))
	}
	if (first || changed) && k.cfg.OnChange != nil {
		k.cfg.OnChange()
	}
}

// logRefused logs the pod CIDRs PlanRoutes refused when they differ from
// the last sync's, not at every resync.
func (k *Kubenet) logRefused(refused []RefusedCIDR) {
	s := make([]string, len(refused))
	for i, r := range refused {
		s[i] = r.String()
	}
	key := strings.Join(s, "; ")
	if key == k.lastRefused {
		return
	}
	k.lastRefused = key
	if len(refused) == 0 {
		k.cfg.Logger.Info("no pod CIDR of another node refused any more")
		return
	}
	k.cfg.Logger.Warn("pod CIDRs of other nodes refused: no route, no masquerade exemption", "refused", key)
}

// Configured says whether the CNI configuration for the node's pod CIDRs
// is written, which is what this node's pods need (the routes serve the
// other nodes' pods), with the writer's message when it is not. OnChange
// is called when it changes.
func (k *Kubenet) Configured() (ok bool, message string) {
	ok, _, message = k.cfg.Writer.Status()
	return ok, message
}

// Condition is the NetworkUnavailable node condition: False once the
// configuration is written and the routes are in place. ok is false until
// the first sync has finished: an agent that restarts must not report the
// network unavailable before it has looked (the node lifecycle controller
// would taint the node, then untaint it).
func (k *Kubenet) Condition() (c v1.NodeCondition, ok bool) {
	k.mu.Lock()
	synced := k.synced
	k.mu.Unlock()
	if !synced {
		return v1.NodeCondition{}, false
	}
	ready, reason, msg := k.status()
	c = v1.NodeCondition{Type: v1.NodeNetworkUnavailable, Status: v1.ConditionTrue, Reason: reason, Message: msg}
	if ready {
		c.Status, c.Message = v1.ConditionFalse, "nodeagent (kubenet) configured the pod network and routes"
	}
	return c, true
}

// status is the network's readiness, with the reason and message of the
// NetworkUnavailable condition: the configuration writer's outcome, unless
// it is ready and the routes or the masquerade rules failed.
func (k *Kubenet) status() (ready bool, reason, message string) {
	ready, reason, message = k.cfg.Writer.Status()
	k.mu.Lock()
	routeErr := k.routeErr
	k.mu.Unlock()
	if ready && routeErr != nil {
		return false, ReasonNoRouteCreated, oneLine(routeErr.Error())
	}
	return ready, reason, message
}
