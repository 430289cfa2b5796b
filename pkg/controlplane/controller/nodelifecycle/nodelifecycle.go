package nodelifecycle

import (
	"context"
	"log/slog"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	coordlisters "k8s.io/client-go/listers/coordination/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"

	"github.com/nodeagent/nodeagent/pkg/controlplane/controller/internal/ctrlutil"
)

// Upstream's defaults.
const (
	DefaultGracePeriod        = 40 * time.Second // --node-monitor-grace-period
	DefaultStartupGracePeriod = 60 * time.Second // --node-startup-grace-period
	DefaultMonitorPeriod      = 5 * time.Second  // --node-monitor-period
)

// LeaseNamespace holds the nodes' heartbeat Leases.
const LeaseNamespace = v1.NamespaceNodeLease

const podNodeIndex = "spec.nodeName"

// The sources of the controller's events, as upstream's node lifecycle and
// taint eviction controllers.
const (
	EventComponent         = "node-controller"
	EvictionEventComponent = "taint-eviction-controller"
)

// Config tunes the controller; zero values take the defaults.
type Config struct {
	GracePeriod        time.Duration
	StartupGracePeriod time.Duration
	MonitorPeriod      time.Duration
	Now                func() time.Time // for tests
}

// Controller is the node lifecycle controller.
type Controller struct {
	cfg         Config
	client      kubernetes.Interface
	nodeLister  corelisters.NodeLister
	leaseLister coordlisters.LeaseLister
	podIndexer  cache.Indexer
	synced      []cache.InformerSynced
	queue       workqueue.TypedRateLimitingInterface[string]
	events      *ctrlutil.Events
	recorder    record.EventRecorder // node-controller
	evictions   record.EventRecorder // taint-eviction-controller
	log         *slog.Logger

	// known are the nodes seen so far (name to UID), to report
	// RegisteredNode and RemovingNode once each; only the single sync
	// worker touches it.
	known map[string]types.UID
}

// New registers the controller's informers with factory; start the factory
// after New and before Run.
func New(client kubernetes.Interface, factory informers.SharedInformerFactory, cfg Config, log *slog.Logger) *Controller {
	if cfg.GracePeriod <= 0 {
		cfg.GracePeriod = DefaultGracePeriod
	}
	if cfg.StartupGracePeriod <= 0 {
		cfg.StartupGracePeriod = DefaultStartupGracePeriod
	}
	if cfg.MonitorPeriod <= 0 {
		cfg.MonitorPeriod = DefaultMonitorPeriod
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	nodeInf := factory.Core().V1().Nodes()
	leaseInf := factory.Coordination().V1().Leases()
	podInf := factory.Core().V1().Pods()
	_ = podInf.Informer().AddIndexers(cache.Indexers{podNodeIndex: func(obj any) ([]string, error) {
		if p, ok := obj.(*v1.Pod); ok && p.Spec.NodeName != "" {
			return []string{p.Spec.NodeName}, nil
		}
		return nil, nil
	}})
	c := &Controller{
		cfg: cfg, client: client,
		nodeLister:  nodeInf.Lister(),
		leaseLister: leaseInf.Lister(),
		podIndexer:  podInf.Informer().GetIndexer(),
		synced:      []cache.InformerSynced{nodeInf.Informer().HasSynced, leaseInf.Informer().HasSynced, podInf.Informer().HasSynced},
		queue:       ctrlutil.NewQueue[string]("nodelifecycle"),
		events:      ctrlutil.NewEvents(client),
		log:         log,
		known:       map[string]types.UID{},
	}
	c.recorder = c.events.Recorder(EventComponent)
	c.evictions = c.events.Recorder(EvictionEventComponent)
	_, _ = nodeInf.Informer().AddEventHandler(ctrlutil.EventHandler(log, cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.queue.Add(obj.(*v1.Node).Name) },
		UpdateFunc: func(_, cur any) { c.queue.Add(cur.(*v1.Node).Name) },
		DeleteFunc: func(obj any) {
			if n, ok := ctrlutil.Unwrap(obj).(*v1.Node); ok {
				c.queue.Add(n.Name)
			}
		},
	}))
	_, _ = leaseInf.Informer().AddEventHandler(ctrlutil.EventHandler(log, cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(_, cur any) {
			if l := cur.(*coordinationv1.Lease); l.Namespace == LeaseNamespace {
				c.queue.Add(l.Name)
			}
		},
	}))
	podChanged := func(obj any) {
		if p, ok := obj.(*v1.Pod); ok && p.Spec.NodeName != "" {
			c.queue.Add(p.Spec.NodeName)
		}
	}
	_, _ = podInf.Informer().AddEventHandler(ctrlutil.EventHandler(log, cache.ResourceEventHandlerFuncs{
		AddFunc:    podChanged,
		UpdateFunc: func(_, cur any) { podChanged(cur) },
	}))
	return c
}

// Run monitors nodes every MonitorPeriod until ctx ends.
func (c *Controller) Run(ctx context.Context) error {
	c.log.Info("starting node lifecycle controller", "gracePeriod", c.cfg.GracePeriod)
	defer c.events.Start(c.log)()
	go func() {
		if !cache.WaitForCacheSync(ctx.Done(), c.synced...) {
			return
		}
		t := time.NewTicker(c.cfg.MonitorPeriod)
		defer t.Stop()
		for {
			nodes, _ := c.nodeLister.List(labels.Everything())
			for _, n := range nodes {
				c.queue.Add(n.Name)
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return ctrlutil.RunWorkers(ctx, c.log, c.queue, 1, c.sync, c.synced...)
}
