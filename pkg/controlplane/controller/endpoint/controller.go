package endpoint

import (
	"context"
	"log/slog"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"

	"github.com/nodeagent/nodeagent/pkg/controlplane/controller/internal/ctrlutil"
	"github.com/nodeagent/nodeagent/pkg/controlplane/controller/internal/endpointutil"
)

// EventComponent is the source of the controller's events, as upstream's.
const EventComponent = "endpoint-controller"

// Controller is the Endpoints controller; its queue holds service keys.
type Controller struct {
	client    kubernetes.Interface
	services  corelisters.ServiceLister
	pods      corelisters.PodLister
	endpoints corelisters.EndpointsLister
	synced    []cache.InformerSynced
	queue     workqueue.TypedRateLimitingInterface[string]
	triggers  *endpointutil.TriggerTimeTracker
	stale     *staleTracker
	events    *ctrlutil.Events
	recorder  record.EventRecorder
	log       *slog.Logger
}

// New registers the controller's informers with factory; start the factory
// after New and before Run.
func New(client kubernetes.Interface, factory informers.SharedInformerFactory, log *slog.Logger) *Controller {
	svcInf := factory.Core().V1().Services()
	podInf := factory.Core().V1().Pods()
	epInf := factory.Core().V1().Endpoints() //nolint:staticcheck // core/v1 Endpoints is what this controller writes
	c := &Controller{
		client:    client,
		services:  svcInf.Lister(),
		pods:      podInf.Lister(),
		endpoints: epInf.Lister(),
		synced:    []cache.InformerSynced{svcInf.Informer().HasSynced, podInf.Informer().HasSynced, epInf.Informer().HasSynced},
		queue:     ctrlutil.NewQueue[string]("endpoint"),
		triggers:  endpointutil.NewTriggerTimeTracker(),
		stale:     newStaleTracker(),
		events:    ctrlutil.NewEvents(client),
		log:       log,
	}
	c.recorder = c.events.Recorder(EventComponent)
	_, _ = svcInf.Informer().AddEventHandlerWithResyncPeriod(ctrlutil.EventHandler(log, cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueue,
		UpdateFunc: func(_, cur any) { c.enqueue(cur) },
		DeleteFunc: c.enqueue,
	}), ctrlutil.Resync)
	_, _ = podInf.Informer().AddEventHandler(ctrlutil.EventHandler(log, endpointutil.PodHandler(c.services, c.queue, c.log)))
	// A deleted Endpoints object is written again (or stays gone when its
	// service went).
	_, _ = epInf.Informer().AddEventHandler(ctrlutil.EventHandler(log, cache.ResourceEventHandlerFuncs{DeleteFunc: c.enqueue}))
	return c
}

// Run runs workers until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) error {
	c.log.Info("starting endpoint controller")
	defer c.events.Start(c.log)()
	go c.queueLeftovers(ctx)
	return ctrlutil.RunWorkers(ctx, c.log, c.queue, workers, c.sync, c.synced...)
}

// enqueue queues the key of a service or Endpoints object (they share
// names), tombstones included.
func (c *Controller) enqueue(obj any) {
	if m, ok := ctrlutil.Unwrap(obj).(metav1.Object); ok {
		c.queue.Add(ctrlutil.Key(m))
	}
}

// queueLeftovers queues every Endpoints object once the caches hold them,
// so that those whose service went while the controller was down are
// deleted. Leader-election records live in Endpoints without a service.
func (c *Controller) queueLeftovers(ctx context.Context) {
	if !cache.WaitForCacheSync(ctx.Done(), c.synced...) {
		return
	}
	list, err := c.endpoints.List(labels.Everything())
	if err != nil {
		c.log.Warn("listing endpoints; orphans stay", "err", err)
		return
	}
	for _, ep := range list {
		if _, ok := ep.Annotations[resourcelock.LeaderElectionRecordAnnotationKey]; !ok {
			c.queue.Add(ctrlutil.Key(ep))
		}
	}
}
