package persistentvolume

import (
	"context"
	"log/slog"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	storagelisters "k8s.io/client-go/listers/storage/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"

	"github.com/nodeagent/nodeagent/pkg/controlplane/controller/internal/ctrlutil"
)

// EventComponent is the source of the controller's events, as upstream's.
const EventComponent = "persistentvolume-controller"

// DefaultSyncPeriod is upstream's --pvclaimbinder-sync-period.
const DefaultSyncPeriod = 15 * time.Second

// Config tunes the controller; zero values take the defaults.
type Config struct {
	// SyncPeriod is how often every claim and volume is synced again.
	SyncPeriod time.Duration
}

// Controller binds claims to volumes; see the package documentation.
type Controller struct {
	client   kubernetes.Interface
	cfg      Config
	volumes  corelisters.PersistentVolumeLister
	claims   corelisters.PersistentVolumeClaimLister
	classes  storagelisters.StorageClassLister
	synced   []cache.InformerSynced
	volumeQ  workqueue.TypedRateLimitingInterface[string]
	claimQ   workqueue.TypedRateLimitingInterface[string]
	events   *ctrlutil.Events
	recorder record.EventRecorder
	log      *slog.Logger
}

// New registers the controller's informers with factory; start the
// factory after New and before Run.
func New(client kubernetes.Interface, factory informers.SharedInformerFactory, cfg Config, log *slog.Logger) *Controller {
	if cfg.SyncPeriod <= 0 {
		cfg.SyncPeriod = DefaultSyncPeriod
	}
	pvInf := factory.Core().V1().PersistentVolumes()
	pvcInf := factory.Core().V1().PersistentVolumeClaims()
	scInf := factory.Storage().V1().StorageClasses()
	c := &Controller{
		client:  client,
		cfg:     cfg,
		volumes: pvInf.Lister(),
		claims:  pvcInf.Lister(),
		classes: scInf.Lister(),
		synced:  []cache.InformerSynced{pvInf.Informer().HasSynced, pvcInf.Informer().HasSynced, scInf.Informer().HasSynced},
		volumeQ: ctrlutil.NewQueue[string]("volumes"),
		claimQ:  ctrlutil.NewQueue[string]("claims"),
		events:  ctrlutil.NewEvents(client),
		log:     log,
	}
	c.recorder = c.events.Recorder(EventComponent)
	_, _ = pvInf.Informer().AddEventHandler(ctrlutil.EventHandler(log, cache.ResourceEventHandlerFuncs{
		AddFunc:    c.volumeChanged,
		UpdateFunc: func(_, cur any) { c.volumeChanged(cur) },
		DeleteFunc: c.volumeDeleted,
	}))
	_, _ = pvcInf.Informer().AddEventHandler(ctrlutil.EventHandler(log, cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueueClaim,
		UpdateFunc: func(_, cur any) { c.enqueueClaim(cur) },
		DeleteFunc: c.claimDeleted,
	}))
	return c
}

// Run syncs claims and volumes, one worker each as upstream, until ctx ends.
func (c *Controller) Run(ctx context.Context) error {
	c.log.Info("starting persistent volume binder")
	defer c.events.Start(c.log)()
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	wg.Go(func() { errs <- ctrlutil.RunWorkers(ctx, c.log, c.volumeQ, 1, c.syncVolumeKey, c.synced...) })
	wg.Go(func() { errs <- ctrlutil.RunWorkers(ctx, c.log, c.claimQ, 1, c.syncClaimKey, c.synced...) })
	wg.Go(func() { c.resyncLoop(ctx) })
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// resyncLoop queues every claim and volume each SyncPeriod: claims wait
// for volumes that appear, volumes for claims that go, as upstream's resync.
func (c *Controller) resyncLoop(ctx context.Context) {
	t := time.NewTicker(c.cfg.SyncPeriod)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			c.enqueueAll()
		}
	}
}

func (c *Controller) enqueueAll() {
	if pvs, err := c.volumes.List(labels.Everything()); err == nil {
		for _, pv := range pvs {
			c.volumeQ.Add(pv.Name)
		}
	}
	if pvcs, err := c.claims.List(labels.Everything()); err == nil {
		for _, pvc := range pvcs {
			c.claimQ.Add(ctrlutil.Key(pvc))
		}
	}
}

// volumeChanged syncs the volume and, when it may be free, the claims
// still waiting: upstream waits for their next resync instead.
func (c *Controller) volumeChanged(obj any) {
	pv, ok := obj.(*v1.PersistentVolume)
	if !ok {
		return
	}
	c.volumeQ.Add(pv.Name)
	if pv.Spec.ClaimRef != nil && pv.Spec.ClaimRef.UID != "" {
		c.claimQ.Add(pv.Spec.ClaimRef.Namespace + "/" + pv.Spec.ClaimRef.Name)
		return
	}
	if pvcs, err := c.claims.List(labels.Everything()); err == nil {
		for _, pvc := range pvcs {
			if pvc.Spec.VolumeName == "" || pvc.Spec.VolumeName == pv.Name {
				c.claimQ.Add(ctrlutil.Key(pvc))
			}
		}
	}
}

// volumeDeleted: its claim is now Lost.
func (c *Controller) volumeDeleted(obj any) {
	pv, ok := ctrlutil.Unwrap(obj).(*v1.PersistentVolume)
	if ok && pv.Spec.ClaimRef != nil {
		c.claimQ.Add(pv.Spec.ClaimRef.Namespace + "/" + pv.Spec.ClaimRef.Name)
	}
}

func (c *Controller) enqueueClaim(obj any) {
	if pvc, ok := obj.(*v1.PersistentVolumeClaim); ok {
		c.claimQ.Add(ctrlutil.Key(pvc))
	}
}

// claimDeleted: volumes claimed by it are released.
func (c *Controller) claimDeleted(obj any) {
	pvc, ok := ctrlutil.Unwrap(obj).(*v1.PersistentVolumeClaim)
	if !ok {
		return
	}
	if pvc.Spec.VolumeName != "" {
		c.volumeQ.Add(pvc.Spec.VolumeName)
	}
	pvs, err := c.volumes.List(labels.Everything())
	if err != nil {
		return
	}
	for _, pv := range pvs {
		if ref := pv.Spec.ClaimRef; ref != nil && ref.Namespace == pvc.Namespace && ref.Name == pvc.Name {
			c.volumeQ.Add(pv.Name)
		}
	}
}
