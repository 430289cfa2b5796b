package garbagecollector

import (
	"context"
	"errors"
	"log/slog"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/nodeagent/nodeagent/pkg/controlplane/controller/internal/ctrlutil"
)

const ownerIndex = "ownerUID"

// item is one object to look at: an index into kinds and its key.
type item struct {
	kind int
	key  string
}

// Collector is the garbage collector.
type Collector struct {
	kinds  []*kind
	queue  workqueue.TypedRateLimitingInterface[item]
	log    *slog.Logger
	synced []cache.InformerSynced
}

// New registers the collector's informers with factory; start the factory
// after New and before Run.
func New(client kubernetes.Interface, factory informers.SharedInformerFactory, log *slog.Logger) *Collector {
	c := &Collector{kinds: kinds(client, factory), queue: ctrlutil.NewQueue[item]("garbagecollector"), log: log}
	for i, k := range c.kinds {
		_ = k.informer.AddIndexers(cache.Indexers{ownerIndex: func(obj any) ([]string, error) {
			m, ok := obj.(metav1.Object)
			if !ok {
				return nil, nil
			}
			var uids []string
			for _, r := range m.GetOwnerReferences() {
				uids = append(uids, string(r.UID))
			}
			return uids, nil
		}})
		add := func(obj any) {
			if m, ok := obj.(metav1.Object); ok {
				c.queue.Add(item{i, ctrlutil.Key(m)})
			}
		}
		_, _ = k.informer.AddEventHandlerWithResyncPeriod(ctrlutil.EventHandler(log, cache.ResourceEventHandlerFuncs{
			AddFunc:    add,
			UpdateFunc: func(_, cur any) { add(cur) },
			DeleteFunc: func(obj any) {
				if m, ok := ctrlutil.Unwrap(obj).(metav1.Object); ok {
					c.enqueueDependents(m.GetUID())
					c.enqueueOwners(m) // a foreground owner may be waiting for it
				}
			},
		}), ctrlutil.Resync)
		c.synced = append(c.synced, k.informer.HasSynced)
	}
	return c
}

// Run runs workers until ctx ends.
func (c *Collector) Run(ctx context.Context, workers int) error {
	c.log.Info("starting garbage collector")
	return ctrlutil.RunWorkers(ctx, c.log, c.queue, workers, c.sync, c.synced...)
}

func (c *Collector) enqueueDependents(uid types.UID) {
	for i, k := range c.kinds {
		deps, _ := k.informer.GetIndexer().ByIndex(ownerIndex, string(uid))
		for _, d := range deps {
			c.queue.Add(item{i, ctrlutil.Key(d.(metav1.Object))})
		}
	}
}

func (c *Collector) enqueueOwners(m metav1.Object) {
	for _, ref := range m.GetOwnerReferences() {
		for i, k := range c.kinds {
			if k.apiVersion == ref.APIVersion && k.kind == ref.Kind {
				key := ref.Name
				if k.namespaced {
					key = m.GetNamespace() + "/" + ref.Name
				}
				c.queue.Add(item{i, key})
			}
		}
	}
}

// dependents lists the cached objects with an owner reference to uid.
func (c *Collector) dependents(uid types.UID) []dependent {
	var out []dependent
	for i, k := range c.kinds {
		deps, _ := k.informer.GetIndexer().ByIndex(ownerIndex, string(uid))
		for _, d := range deps {
			out = append(out, dependent{kind: i, obj: d.(metav1.Object)})
		}
	}
	return out
}

type dependent struct {
	kind int
	obj  metav1.Object
}

func (c *Collector) sync(ctx context.Context, it item) error {
	k := c.kinds[it.kind]
	raw, exists, err := k.informer.GetIndexer().GetByKey(it.key)
	if err != nil || !exists {
		return err
	}
	obj := raw.(metav1.Object)
	if obj.GetDeletionTimestamp() != nil {
		switch fs := obj.GetFinalizers(); {
		case slices.Contains(fs, metav1.FinalizerOrphanDependents):
			return c.orphanDependents(ctx, k, obj)
		case slices.Contains(fs, metav1.FinalizerDeleteDependents):
			return c.deleteDependents(ctx, k, obj)
		}
		return nil // being deleted by other means
	}
	if len(obj.GetOwnerReferences()) == 0 {
		return nil
	}
	return c.attemptToDelete(ctx, it.kind, obj)
}

// attemptToDelete classifies obj's owners and deletes obj, or removes its
// references to missing owners, as upstream's attemptToDeleteItem.
func (c *Collector) attemptToDelete(ctx context.Context, kindIdx int, obj metav1.Object) error {
	var solid, dangling, waiting []metav1.OwnerReference
	for _, ref := range obj.GetOwnerReferences() {
		state, err := c.ownerState(ctx, obj, ref)
		if err != nil {
			return err
		}
		switch state {
		case ownerMissing:
			dangling = append(dangling, ref)
		case ownerWaiting:
			waiting = append(waiting, ref)
		default:
			solid = append(solid, ref)
		}
	}
	k := c.kinds[kindIdx]
	switch {
	case len(solid) > 0 && len(dangling)+len(waiting) == 0:
		return nil
	case len(solid) > 0:
		cp := copyOf(obj)
		refs := cp.GetOwnerReferences()
		for _, r := range append(dangling, waiting...) {
			refs = ctrlutil.RemoveOwnerRef(refs, r.UID)
		}
		cp.SetOwnerReferences(refs)
		c.log.Info("removing references to deleted owners", "kind", k.kind, "object", ctrlutil.Key(obj))
		return ignoreNotFound(k.update(ctx, cp))
	}
	// Every owner is gone or being deleted in the foreground.
	policy := metav1.DeletePropagationBackground
	switch {
	case slices.Contains(obj.GetFinalizers(), metav1.FinalizerOrphanDependents):
		policy = metav1.DeletePropagationOrphan
	case len(waiting) > 0 && len(c.dependents(obj.GetUID())) > 0,
		slices.Contains(obj.GetFinalizers(), metav1.FinalizerDeleteDependents):
		policy = metav1.DeletePropagationForeground
	}
	c.log.Info("deleting dependent of a deleted owner", "kind", k.kind, "object", ctrlutil.Key(obj), "propagation", policy)
	return c.deleteObject(ctx, k, obj, policy)
}

// deleteObject deletes with a UID precondition. For the foreground policy
// it adds the foregroundDeletion finalizer itself first, so the cascade
// works whether or not the API server turns the policy into a finalizer.
func (c *Collector) deleteObject(ctx context.Context, k *kind, obj metav1.Object, policy metav1.DeletionPropagation) error {
	if policy == metav1.DeletePropagationForeground && !slices.Contains(obj.GetFinalizers(), metav1.FinalizerDeleteDependents) {
		cp := copyOf(obj)
		cp.SetFinalizers(append(cp.GetFinalizers(), metav1.FinalizerDeleteDependents))
		if err := k.update(ctx, cp); err != nil {
			return ignoreNotFound(err)
		}
	}
	uid := obj.GetUID()
	err := k.delete(ctx, obj.GetNamespace(), obj.GetName(), metav1.DeleteOptions{
		Preconditions: &metav1.Preconditions{UID: &uid}, PropagationPolicy: &policy,
	})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) { // gone, or replaced
		return nil
	}
	return err
}

type ownerStatus int

const (
	ownerPresent ownerStatus = iota
	ownerMissing
	ownerWaiting // being deleted in the foreground: waits for its dependents
)

// ownerState looks the owner up in the cache and, before calling it
// missing, in the API server (the cache may lag a new owner).
func (c *Collector) ownerState(ctx context.Context, dep metav1.Object, ref metav1.OwnerReference) (ownerStatus, error) {
	k := c.kindOf(ref)
	if k == nil {
		return ownerPresent, nil // a kind we do not watch: never delete for it
	}
	ns := ""
	if k.namespaced {
		if dep.GetNamespace() == "" {
			return ownerPresent, nil // invalid: a cluster-scoped object with a namespaced owner
		}
		ns = dep.GetNamespace()
	}
	key := ref.Name
	if ns != "" {
		key = ns + "/" + ref.Name
	}
	var owner metav1.Object
	if raw, ok, _ := k.informer.GetIndexer().GetByKey(key); ok && raw.(metav1.Object).GetUID() == ref.UID {
		owner = raw.(metav1.Object)
	} else {
		live, err := k.get(ctx, ns, ref.Name)
		switch {
		case apierrors.IsNotFound(err):
			return ownerMissing, nil
		case err != nil:
			return ownerPresent, err
		case live.GetUID() != ref.UID:
			return ownerMissing, nil
		}
		owner = live
	}
	if owner.GetDeletionTimestamp() != nil && slices.Contains(owner.GetFinalizers(), metav1.FinalizerDeleteDependents) {
		return ownerWaiting, nil
	}
	return ownerPresent, nil
}

func (c *Collector) kindOf(ref metav1.OwnerReference) *kind {
	for _, k := range c.kinds {
		if k.apiVersion == ref.APIVersion && k.kind == ref.Kind {
			return k
		}
	}
	return nil
}

// deleteDependents is the foreground cascade: delete the dependents, and
// drop the finalizer once none with blockOwnerDeletion is left.
func (c *Collector) deleteDependents(ctx context.Context, k *kind, owner metav1.Object) error {
	blocking := 0
	var errs []error
	for _, d := range c.dependents(owner.GetUID()) {
		for _, r := range d.obj.GetOwnerReferences() {
			if r.UID == owner.GetUID() && r.BlockOwnerDeletion != nil && *r.BlockOwnerDeletion {
				blocking++
			}
		}
		if d.obj.GetDeletionTimestamp() == nil {
			errs = append(errs, c.attemptToDelete(ctx, d.kind, d.obj))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if blocking > 0 {
		return nil // dependents' deletions requeue the owner
	}
	return c.removeFinalizer(ctx, k, owner, metav1.FinalizerDeleteDependents)
}

// orphanDependents removes the owner's references from its dependents,
// then the orphan finalizer.
func (c *Collector) orphanDependents(ctx context.Context, k *kind, owner metav1.Object) error {
	for _, d := range c.dependents(owner.GetUID()) {
		cp := copyOf(d.obj)
		cp.SetOwnerReferences(ctrlutil.RemoveOwnerRef(cp.GetOwnerReferences(), owner.GetUID()))
		if err := ignoreNotFound(c.kinds[d.kind].update(ctx, cp)); err != nil {
			return err
		}
	}
	return c.removeFinalizer(ctx, k, owner, metav1.FinalizerOrphanDependents)
}

func (c *Collector) removeFinalizer(ctx context.Context, k *kind, obj metav1.Object, f string) error {
	cp := copyOf(obj)
	cp.SetFinalizers(slices.DeleteFunc(slices.Clone(cp.GetFinalizers()), func(s string) bool { return s == f }))
	c.log.Info("removing finalizer", "kind", k.kind, "object", ctrlutil.Key(obj), "finalizer", f)
	return ignoreNotFound(k.update(ctx, cp))
}

func copyOf(obj metav1.Object) metav1.Object {
	return obj.(runtime.Object).DeepCopyObject().(metav1.Object)
}

func ignoreNotFound(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
