package replicaset

import (
	"context"
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

// BurstReplicas caps the creations or deletions of one sync (upstream's
// --replicaset-burst default).
const BurstReplicas = 500

var controllerKind = appsv1.SchemeGroupVersion.WithKind("ReplicaSet")

// Controller is the ReplicaSet controller.
type Controller struct {
	client    kubernetes.Interface
	rsLister  appslisters.ReplicaSetLister
	podLister corelisters.PodLister
	synced    []cache.InformerSynced
	queue     workqueue.TypedRateLimitingInterface[string]
	exp       *expectations
	events    *ctrlutil.Events
	recorder  record.EventRecorder
	log       *slog.Logger
	now       func() time.Time
}

// EventComponent is the source of the controller's events, as upstream's.
const EventComponent = "replicaset-controller"

// New registers the controller's informers with factory; start the factory
// after New and before Run.
func New(client kubernetes.Interface, factory informers.SharedInformerFactory, log *slog.Logger) *Controller {
	rsInf := factory.Apps().V1().ReplicaSets()
	podInf := factory.Core().V1().Pods()
	c := &Controller{
		client:    client,
		rsLister:  rsInf.Lister(),
		podLister: podInf.Lister(),
		synced:    []cache.InformerSynced{rsInf.Informer().HasSynced, podInf.Informer().HasSynced},
		queue:     ctrlutil.NewQueue[string]("replicaset"),
		events:    ctrlutil.NewEvents(client),
		log:       log,
		now:       time.Now,
	}
	c.recorder = c.events.Recorder(EventComponent)
	c.exp = newExpectations(func() time.Time { return c.now() })
	_, _ = rsInf.Informer().AddEventHandlerWithResyncPeriod(ctrlutil.EventHandler(log, cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueue,
		UpdateFunc: func(_, cur any) { c.enqueue(cur) },
		DeleteFunc: func(obj any) {
			if rs, ok := ctrlutil.Unwrap(obj).(*appsv1.ReplicaSet); ok {
				c.exp.forget(ctrlutil.Key(rs))
				c.queue.Add(ctrlutil.Key(rs))
			}
		},
	}), ctrlutil.Resync)
	_, _ = podInf.Informer().AddEventHandler(ctrlutil.EventHandler(log, cache.ResourceEventHandlerFuncs{
		AddFunc:    c.addPod,
		UpdateFunc: c.updatePod,
		DeleteFunc: c.deletePod,
	}))
	return c
}

// Run runs workers until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) error {
	c.log.Info("starting replicaset controller")
	defer c.events.Start(c.log)()
	return ctrlutil.RunWorkers(ctx, c.log, c.queue, workers, c.sync, c.synced...)
}

func (c *Controller) enqueue(obj any) {
	if rs, ok := obj.(*appsv1.ReplicaSet); ok {
		c.queue.Add(ctrlutil.Key(rs))
	}
}

// ownerOf resolves a pod's controllerRef to a ReplicaSet in the cache.
func (c *Controller) ownerOf(pod *v1.Pod) *appsv1.ReplicaSet {
	ref := metav1.GetControllerOf(pod)
	if ref == nil || ref.Kind != controllerKind.Kind {
		return nil
	}
	rs, err := c.rsLister.ReplicaSets(pod.Namespace).Get(ref.Name)
	if err != nil || rs.UID != ref.UID {
		return nil
	}
	return rs
}

// enqueueMatching queues every ReplicaSet whose selector matches an orphan.
func (c *Controller) enqueueMatching(pod *v1.Pod) {
	list, _ := c.rsLister.ReplicaSets(pod.Namespace).List(labels.Everything())
	for _, rs := range list {
		sel, err := metav1.LabelSelectorAsSelector(rs.Spec.Selector)
		if err == nil && !sel.Empty() && sel.Matches(labels.Set(pod.Labels)) {
			c.queue.Add(ctrlutil.Key(rs))
		}
	}
}

func (c *Controller) addPod(obj any) {
	pod := obj.(*v1.Pod)
	if pod.DeletionTimestamp != nil {
		c.deletePod(pod) // seen only after a restart: it counts as a deletion
		return
	}
	if rs := c.ownerOf(pod); rs != nil {
		c.exp.creationObserved(ctrlutil.Key(rs))
		c.queue.Add(ctrlutil.Key(rs))
		return
	}
	if metav1.GetControllerOf(pod) == nil {
		c.enqueueMatching(pod)
	}
}

func (c *Controller) updatePod(old, cur any) {
	oldPod, pod := old.(*v1.Pod), cur.(*v1.Pod)
	if pod.ResourceVersion == oldPod.ResourceVersion {
		return // resync: the ReplicaSets resync themselves
	}
	if pod.DeletionTimestamp != nil {
		// A graceful deletion: the pod stops counting now, as upstream.
		c.deletePod(pod)
		if !reflect.DeepEqual(pod.Labels, oldPod.Labels) {
			c.deletePod(oldPod)
		}
		return
	}
	oldRef, ref := metav1.GetControllerOf(oldPod), metav1.GetControllerOf(pod)
	if oldRef != nil && (ref == nil || oldRef.UID != ref.UID) {
		if rs := c.ownerOf(oldPod); rs != nil {
			c.queue.Add(ctrlutil.Key(rs))
		}
	}
	if rs := c.ownerOf(pod); rs != nil {
		c.queue.Add(ctrlutil.Key(rs))
		// A pod that turned ready becomes available after minReadySeconds.
		if rs.Spec.MinReadySeconds > 0 && !isReady(oldPod) && isReady(pod) {
			c.queue.AddAfter(ctrlutil.Key(rs), time.Duration(rs.Spec.MinReadySeconds)*time.Second+time.Second)
		}
		return
	}
	if ref == nil && (!reflect.DeepEqual(pod.Labels, oldPod.Labels) || oldRef != nil) {
		c.enqueueMatching(pod)
	}
}

func (c *Controller) deletePod(obj any) {
	pod, ok := ctrlutil.Unwrap(obj).(*v1.Pod)
	if !ok {
		return
	}
	if rs := c.ownerOf(pod); rs != nil {
		c.exp.deletionObserved(ctrlutil.Key(rs), ctrlutil.Key(pod))
		c.queue.Add(ctrlutil.Key(rs))
	}
}

// sync reconciles one ReplicaSet: claim pods, create or delete pods when
// the expectations are met, then write status.
func (c *Controller) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	rs, err := c.rsLister.ReplicaSets(ns).Get(name)
	if apierrors.IsNotFound(err) {
		c.exp.forget(key)
		return nil
	}
	if err != nil {
		return err
	}
	selector, err := metav1.LabelSelectorAsSelector(rs.Spec.Selector)
	if err != nil {
		c.log.Warn("invalid selector", "replicaset", key, "err", err)
		return nil
	}
	satisfied := c.exp.satisfied(key)
	all, err := c.podLister.Pods(ns).List(labels.Everything())
	if err != nil {
		return err
	}
	pods, err := c.claimPods(ctx, rs, selector, activePods(all))
	if err != nil {
		return err
	}
	var manageErr error
	if satisfied && rs.DeletionTimestamp == nil {
		manageErr = c.manageReplicas(ctx, pods, rs)
	}
	rs = rs.DeepCopy()
	status := calculateStatus(rs, pods, manageErr, c.now())
	updated, err := c.updateStatus(ctx, rs, status)
	if err != nil {
		return err
	}
	if manageErr == nil && updated.Spec.MinReadySeconds > 0 &&
		updated.Status.ReadyReplicas == *updated.Spec.Replicas && updated.Status.AvailableReplicas != *updated.Spec.Replicas {
		c.queue.AddAfter(key, time.Duration(updated.Spec.MinReadySeconds)*time.Second)
	}
	return manageErr
}

func (c *Controller) claimPods(ctx context.Context, rs *appsv1.ReplicaSet, sel labels.Selector, pods []*v1.Pod) ([]*v1.Pod, error) {
	pc := c.client.CoreV1().Pods(rs.Namespace)
	m := ctrlutil.NewClaimer[*v1.Pod](rs, controllerKind, sel,
		func(ctx context.Context) (metav1.Object, error) {
			return c.client.AppsV1().ReplicaSets(rs.Namespace).Get(ctx, rs.Name, metav1.GetOptions{})
		},
		func(ctx context.Context, name string, data []byte) error {
			_, err := pc.Patch(ctx, name, types.StrategicMergePatchType, data, metav1.PatchOptions{})
			return err
		})
	return m.Claim(ctx, pods)
}

func (c *Controller) updateStatus(ctx context.Context, rs *appsv1.ReplicaSet, status appsv1.ReplicaSetStatus) (*appsv1.ReplicaSet, error) {
	status.ObservedGeneration = rs.Generation
	if reflect.DeepEqual(rs.Status, status) {
		return rs, nil
	}
	rs.Status = status
	return c.client.AppsV1().ReplicaSets(rs.Namespace).UpdateStatus(ctx, rs, metav1.UpdateOptions{})
}
