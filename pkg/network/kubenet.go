package network

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
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
	// Masquerade, when set, NATs pod traffic leaving the cluster (the
	// CNI configuration then must not: IPMasq false).
	Masquerade *Masquerade
	Logger     *slog.Logger
	// OnReady, when set, is called once the network first becomes ready
	// (the node status is then sent without waiting for its period).
	OnReady func()
}

// Kubenet owns the node's pod network, as the kubelet's old kubenet
// plugin: it watches every Node, writes the CNI configuration for its own
// Node's pod CIDRs and keeps routes to the others' (host-gw). Condition
// reports the outcome as the NetworkUnavailable node condition.
type Kubenet struct {
	cfg     KubenetConfig
	nodes   corelisters.NodeLister
	factory informers.SharedInformerFactory
	synced  cache.InformerSynced
	kick    chan struct{}

	mu       sync.Mutex
	routeErr error
	ready    bool
}

// NewKubenet builds the Node informer; Run starts it.
func NewKubenet(cfg KubenetConfig) (*Kubenet, error) {
	if cfg.Client == nil || cfg.NodeName == "" || cfg.Writer == nil || cfg.Routes == nil {
		return nil, errors.New("network: kubenet needs Client, NodeName, Writer and Routes")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	f := informers.NewSharedInformerFactory(cfg.Client, kubenetResync)
	inf := f.Core().V1().Nodes()
	k := &Kubenet{cfg: cfg, nodes: inf.Lister(), factory: f, synced: inf.Informer().HasSynced, kick: make(chan struct{}, 1)}
	_, _ = inf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { k.trigger() },
		UpdateFunc: func(old, cur any) { k.nodeUpdated(old, cur) },
		DeleteFunc: func(any) { k.trigger() },
	})
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

// Run syncs on every relevant Node change until ctx ends.
func (k *Kubenet) Run(ctx context.Context) error {
	k.factory.Start(ctx.Done())
	defer k.factory.Shutdown()
	defer k.cfg.Routes.Close()
	if !cache.WaitForCacheSync(ctx.Done(), k.synced) {
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
	cidrs := self.Spec.PodCIDRs
	if len(cidrs) == 0 && self.Spec.PodCIDR != "" {
		cidrs = []string{self.Spec.PodCIDR}
	}
	if _, err := k.cfg.Writer.Sync(ctx, cidrs); err != nil {
		k.cfg.Logger.Error("pod network configuration", "err", err)
	} else if err := ClearBridgeAddresses(k.cfg.Writer.Bridge(), cidrs); err != nil {
		k.cfg.Logger.Error("stale addresses on the pod bridge", "err", err)
	}
	all, err := k.nodes.List(labels.Everything())
	if err != nil {
		return
	}
	plan := PlanRoutes(k.cfg.NodeName, all)
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
	k.routeErr = routeErr
	wasReady := k.ready
	k.ready, _, _ = k.cfg.Writer.Status()
	k.ready = k.ready && routeErr == nil
	nowReady := k.ready
	k.mu.Unlock()
	if nowReady && !wasReady {
		k.cfg.Logger.Info("pod network ready", "routes", len(plan))
		if k.cfg.OnReady != nil {
			k.cfg.OnReady()
		}
	}
}

// Condition is the NetworkUnavailable node condition: False once the
// configuration is written and the routes are in place.
func (k *Kubenet) Condition() v1.NodeCondition {
	ready, reason, msg := k.cfg.Writer.Status()
	k.mu.Lock()
	routeErr := k.routeErr
	k.mu.Unlock()
	if ready && routeErr != nil {
		ready, reason, msg = false, ReasonNoRouteCreated, oneLine(routeErr.Error())
	}
	c := v1.NodeCondition{Type: v1.NodeNetworkUnavailable, Status: v1.ConditionTrue, Reason: reason, Message: msg}
	if ready {
		c.Status, c.Message = v1.ConditionFalse, "nodeagent (kubenet) configured the pod network and routes"
	}
	return c
}
