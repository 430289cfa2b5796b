package endpointslice

import (
	"context"
	"log/slog"
	"time"

	discovery "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	discoverylisters "k8s.io/client-go/listers/discovery/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"

	"github.com/nodeagent/nodeagent/pkg/controlplane/controller/internal/ctrlutil"
	"github.com/nodeagent/nodeagent/pkg/controlplane/controller/internal/endpointutil"
)

// Upstream's names and limits.
const (
	// ControllerName is the managed-by label value of the slices it owns.
	ControllerName = "endpointslice-controller.k8s.io"
	// EventComponent is the source of the controller's events.
	EventComponent = "endpoint-slice-controller"
	// MaxEndpointsPerSlice is --max-endpoints-per-slice's default.
	MaxEndpointsPerSlice = 100
	// sliceChangeDelay batches the syncs that slice events cause (most
	// are the echoes of this controller's own writes).
	sliceChangeDelay = time.Second
)

// Controller is the EndpointSlice controller; its queue holds service keys.
type Controller struct {
	client   kubernetes.Interface
	services corelisters.ServiceLister
	pods     corelisters.PodLister
	nodes    corelisters.NodeLister
	slices   discoverylisters.EndpointSliceLister
	synced   []cache.InformerSynced
	queue    workqueue.TypedRateLimitingInterface[string]
	tracker  *generationTracker
	triggers *endpointutil.TriggerTimeTracker
	events   *ctrlutil.Events
	recorder record.EventRecorder
	log      *slog.Logger
	// maxPerSlice is MaxEndpointsPerSlice; tests lower it.
	maxPerSlice int
}

// New registers the controller's informers with factory; start the factory
// after New and before Run.
func New(client kubernetes.Interface, factory informers.SharedInformerFactory, log *slog.Logger) *Controller {
	svcInf, podInf := factory.Core().V1().Services(), factory.Core().V1().Pods()
	nodeInf, sliceInf := factory.Core().V1().Nodes(), factory.Discovery().V1().EndpointSlices()
	c := &Controller{
		client:   client,
		services: svcInf.Lister(),
		pods:     podInf.Lister(),
		nodes:    nodeInf.Lister(),
		slices:   sliceInf.Lister(),
		synced: []cache.InformerSynced{svcInf.Informer().HasSynced, podInf.Informer().HasSynced,
			nodeInf.Informer().HasSynced, sliceInf.Informer().HasSynced},
		queue:       ctrlutil.NewQueue[string]("endpoint_slice"),
		tracker:     newGenerationTracker(),
		triggers:    endpointutil.NewTriggerTimeTracker(),
		events:      ctrlutil.NewEvents(client),
		log:         log,
		maxPerSlice: MaxEndpointsPerSlice,
	}
	c.recorder = c.events.Recorder(EventComponent)
	_, _ = svcInf.Informer().AddEventHandlerWithResyncPeriod(ctrlutil.EventHandler(log, cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueue,
		UpdateFunc: func(_, cur any) { c.enqueue(cur) },
		DeleteFunc: c.enqueue,
	}), ctrlutil.Resync)
	_, _ = podInf.Informer().AddEventHandler(ctrlutil.EventHandler(log, endpointutil.PodHandler(c.services, c.queue, c.log)))
	_, _ = sliceInf.Informer().AddEventHandler(ctrlutil.EventHandler(log, cache.ResourceEventHandlerFuncs{
		AddFunc:    c.sliceAdded,
		UpdateFunc: c.sliceUpdated,
		DeleteFunc: c.sliceDeleted,
	}))
	return c
}

// Run runs workers until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) error {
	c.log.Info("starting endpointslice controller")
	defer c.events.Start(c.log)()
	return ctrlutil.RunWorkers(ctx, c.log, c.queue, workers, c.sync, c.synced...)
}

func (c *Controller) enqueue(obj any) {
	if m, ok := ctrlutil.Unwrap(obj).(metav1.Object); ok {
		c.queue.Add(ctrlutil.Key(m))
	}
}

// managed reports whether this controller owns the slice.
func managed(s *discovery.EndpointSlice) bool {
	return s.Labels[discovery.LabelManagedBy] == ControllerName
}

// queueServiceOf queues the service a slice belongs to, after the delay
// that batches the echoes of a multi-slice write.
func (c *Controller) queueServiceOf(s *discovery.EndpointSlice) {
	if name := s.Labels[discovery.LabelServiceName]; name != "" {
		c.queue.AddAfter(s.Namespace+"/"+name, sliceChangeDelay)
	}
}

// sliceAdded: a slice of ours the controller did not write (or a newer
// one) means someone else wrote it.
func (c *Controller) sliceAdded(obj any) {
	if s, ok := obj.(*discovery.EndpointSlice); ok && managed(s) && c.tracker.shouldSync(s) {
		c.queueServiceOf(s)
	}
}

// sliceUpdated: the service-name label moving, the slice changing hands,
// or a write not of this controller's.
func (c *Controller) sliceUpdated(old, cur any) {
	prev, ok1 := old.(*discovery.EndpointSlice)
	s, ok2 := cur.(*discovery.EndpointSlice)
	if !ok1 || !ok2 {
		return
	}
	if prev.Labels[discovery.LabelServiceName] != s.Labels[discovery.LabelServiceName] {
		c.queueServiceOf(s)
		c.queueServiceOf(prev)
		return
	}
	if managed(prev) != managed(s) || (managed(s) && c.tracker.shouldSync(s)) {
		c.queueServiceOf(s)
	}
}

// sliceDeleted: a deletion of a slice the controller did not delete.
func (c *Controller) sliceDeleted(obj any) {
	s, ok := ctrlutil.Unwrap(obj).(*discovery.EndpointSlice)
	if ok && managed(s) && c.tracker.has(s) && !c.tracker.handleDeletion(s) {
		c.queueServiceOf(s)
	}
}
