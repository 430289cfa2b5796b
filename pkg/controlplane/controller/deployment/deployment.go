package deployment

import (
	"context"
	"fmt"
	"log/slog"
	"reflect"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"

	"github.com/nodeagent/nodeagent/pkg/controlplane/controller/internal/ctrlutil"
)

var controllerKind = appsv1.SchemeGroupVersion.WithKind("Deployment")

// EventComponent is the source of the controller's events, as upstream's.
const EventComponent = "deployment-controller"

// Controller is the Deployment controller.
type Controller struct {
	client    kubernetes.Interface
	dLister   appslisters.DeploymentLister
	rsLister  appslisters.ReplicaSetLister
	podLister corelisters.PodLister
	synced    []cache.InformerSynced
	queue     workqueue.TypedRateLimitingInterface[string]
	events    *ctrlutil.Events
	recorder  record.EventRecorder
	log       *slog.Logger
	now       func() time.Time
}

// New registers the controller's informers with factory; start the factory
// after New and before Run.
func New(client kubernetes.Interface, factory informers.SharedInformerFactory, log *slog.Logger) *Controller {
	dInf := factory.Apps().V1().Deployments()
	rsInf := factory.Apps().V1().ReplicaSets()
	podInf := factory.Core().V1().Pods()
	c := &Controller{
		client:    client,
		dLister:   dInf.Lister(),
		rsLister:  rsInf.Lister(),
		podLister: podInf.Lister(),
		synced:    []cache.InformerSynced{dInf.Informer().HasSynced, rsInf.Informer().HasSynced, podInf.Informer().HasSynced},
		queue:     ctrlutil.NewQueue[string]("deployment"),
		events:    ctrlutil.NewEvents(client),
		log:       log,
		now:       time.Now,
	}
	c.recorder = c.events.Recorder(EventComponent)
	_, _ = dInf.Informer().AddEventHandlerWithResyncPeriod(ctrlutil.EventHandler(log, cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueue,
		UpdateFunc: func(_, cur any) { c.enqueue(cur) },
		DeleteFunc: func(obj any) { c.enqueue(ctrlutil.Unwrap(obj)) },
	}), ctrlutil.Resync)
	_, _ = rsInf.Informer().AddEventHandler(ctrlutil.EventHandler(log, cache.ResourceEventHandlerFuncs{
		AddFunc: c.rsChanged,
		UpdateFunc: func(old, cur any) {
			if o := metav1.GetControllerOf(old.(*appsv1.ReplicaSet)); o != nil {
				c.enqueueOwner(old.(*appsv1.ReplicaSet).Namespace, o)
			}
			c.rsChanged(cur)
		},
		DeleteFunc: func(obj any) { c.rsChanged(ctrlutil.Unwrap(obj)) },
	}))
	// Recreate waits for old pods to be gone.
	_, _ = podInf.Informer().AddEventHandler(ctrlutil.EventHandler(log, cache.ResourceEventHandlerFuncs{
		DeleteFunc: func(obj any) {
			pod, ok := ctrlutil.Unwrap(obj).(*v1.Pod)
			if !ok {
				return
			}
			if ref := metav1.GetControllerOf(pod); ref != nil && ref.Kind == "ReplicaSet" {
				if rs, err := c.rsLister.ReplicaSets(pod.Namespace).Get(ref.Name); err == nil && rs.UID == ref.UID {
					c.rsChanged(rs)
				}
			}
		},
	}))
	return c
}

// Run runs workers until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) error {
	c.log.Info("starting deployment controller")
	defer c.events.Start(c.log)()
	return ctrlutil.RunWorkers(ctx, c.log, c.queue, workers, c.sync, c.synced...)
}

func (c *Controller) enqueue(obj any) {
	if d, ok := obj.(*appsv1.Deployment); ok {
		c.queue.Add(ctrlutil.Key(d))
	}
}

func (c *Controller) enqueueOwner(ns string, ref *metav1.OwnerReference) {
	if ref.Kind != controllerKind.Kind {
		return
	}
	if d, err := c.dLister.Deployments(ns).Get(ref.Name); err == nil && d.UID == ref.UID {
		c.enqueue(d)
	}
}

// rsChanged queues the owner of a ReplicaSet, or for an orphan every
// Deployment whose selector matches it.
func (c *Controller) rsChanged(obj any) {
	rs, ok := obj.(*appsv1.ReplicaSet)
	if !ok {
		return
	}
	if ref := metav1.GetControllerOf(rs); ref != nil {
		c.enqueueOwner(rs.Namespace, ref)
		return
	}
	list, _ := c.dLister.Deployments(rs.Namespace).List(labels.Everything())
	for _, d := range list {
		sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
		if err == nil && !sel.Empty() && sel.Matches(labels.Set(rs.Labels)) {
			c.enqueue(d)
		}
	}
}

// sync reconciles one Deployment, as upstream's syncDeployment.
func (c *Controller) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	d, err := c.dLister.Deployments(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	d = d.DeepCopy()
	if d.Spec.Selector == nil || (len(d.Spec.Selector.MatchLabels) == 0 && len(d.Spec.Selector.MatchExpressions) == 0) {
		// An empty selector would select everything: upstream refuses.
		c.recorder.Event(d, v1.EventTypeWarning, "SelectingAll", "This deployment is selecting all pods. A non-empty selector is required.")
		if d.Status.ObservedGeneration < d.Generation {
			d.Status.ObservedGeneration = d.Generation
			_, err = c.client.AppsV1().Deployments(ns).UpdateStatus(ctx, d, metav1.UpdateOptions{})
		}
		return err
	}
	rsList, err := c.claimReplicaSets(ctx, d)
	if err != nil {
		return err
	}
	for i := range rsList { // the sync scales these in place: not the cache's
		rsList[i] = rsList[i].DeepCopy()
	}
	if d.DeletionTimestamp != nil {
		newRS, oldRSs, err := c.getAllReplicaSets(ctx, d, rsList, false)
		if err != nil {
			return err
		}
		return c.syncStatus(ctx, append(oldRSs, newRS), newRS, d)
	}
	if d.Spec.Paused {
		return c.syncScaleOnly(ctx, d, rsList)
	}
	if scaling, err := c.isScalingEvent(ctx, d, rsList); err != nil || scaling {
		if err != nil {
			return err
		}
		return c.syncScaleOnly(ctx, d, rsList)
	}
	if d.Spec.Strategy.Type == appsv1.RecreateDeploymentStrategyType {
		return c.rolloutRecreate(ctx, d, rsList)
	}
	return c.rolloutRolling(ctx, d, rsList)
}

// claimReplicaSets adopts and releases ReplicaSets by the selector.
func (c *Controller) claimReplicaSets(ctx context.Context, d *appsv1.Deployment) ([]*appsv1.ReplicaSet, error) {
	sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil {
		return nil, fmt.Errorf("deployment %s/%s has an invalid selector: %w", d.Namespace, d.Name, err)
	}
	all, err := c.rsLister.ReplicaSets(d.Namespace).List(labels.Everything())
	if err != nil {
		return nil, err
	}
	rsc := c.client.AppsV1().ReplicaSets(d.Namespace)
	m := ctrlutil.NewClaimer[*appsv1.ReplicaSet](d, controllerKind, sel,
		func(ctx context.Context) (metav1.Object, error) {
			return c.client.AppsV1().Deployments(d.Namespace).Get(ctx, d.Name, metav1.GetOptions{})
		},
		func(ctx context.Context, name string, data []byte) error {
			_, err := rsc.Patch(ctx, name, types.StrategicMergePatchType, data, metav1.PatchOptions{})
			return err
		})
	return m.Claim(ctx, all)
}

// podsByReplicaSet groups the pods of rsList by their owner's UID.
func (c *Controller) podsByReplicaSet(d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) (map[types.UID][]*v1.Pod, error) {
	sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil {
		return nil, err
	}
	pods, err := c.podLister.Pods(d.Namespace).List(sel)
	if err != nil {
		return nil, err
	}
	m := map[types.UID][]*v1.Pod{}
	for _, rs := range rsList {
		m[rs.UID] = nil
	}
	for _, p := range pods {
		if ref := metav1.GetControllerOf(p); ref != nil {
			if _, ok := m[ref.UID]; ok {
				m[ref.UID] = append(m[ref.UID], p)
			}
		}
	}
	return m, nil
}

// syncStatus writes the calculated status if it changed.
func (c *Controller) syncStatus(ctx context.Context, allRSs []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet, d *appsv1.Deployment) error {
	st := calculateStatus(allRSs, newRS, d, c.now())
	if reflect.DeepEqual(d.Status, st) {
		return nil
	}
	d.Status = st
	_, err := c.client.AppsV1().Deployments(d.Namespace).UpdateStatus(ctx, d, metav1.UpdateOptions{})
	return err
}
