// Package ctrlutil holds what the controllers share: the work loop over a
// rate-limited queue, informer event plumbing and controllerRef claiming
// (upstream's pkg/controller ControllerRefManager).
package ctrlutil

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

// maxRetries is how often a key is retried with backoff before it waits
// for the next event or resync (upstream's controllers use 15).
const maxRetries = 15

// NewQueue is the default controller queue: per-item exponential backoff
// plus an overall token bucket.
func NewQueue[T comparable](name string) workqueue.TypedRateLimitingInterface[T] {
	return workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[T](),
		workqueue.TypedRateLimitingQueueConfig[T]{Name: name})
}

// RunWorkers waits for the caches, then runs workers that call sync for each
// key until ctx ends; it shuts the queue down before returning.
func RunWorkers[T comparable](ctx context.Context, log *slog.Logger, q workqueue.TypedRateLimitingInterface[T],
	workers int, syncFn func(context.Context, T) error, synced ...cache.InformerSynced) error {
	defer q.ShutDown()
	if !cache.WaitForCacheSync(ctx.Done(), synced...) {
		if ctx.Err() != nil {
			return nil
		}
		return errors.New("caches did not sync")
	}
	var wg sync.WaitGroup
	for range max(workers, 1) {
		wg.Go(func() {
			for processNext(ctx, log, q, syncFn) {
			}
		})
	}
	<-ctx.Done()
	q.ShutDown()
	wg.Wait()
	return nil
}

func processNext[T comparable](ctx context.Context, log *slog.Logger, q workqueue.TypedRateLimitingInterface[T], syncFn func(context.Context, T) error) bool {
	key, quit := q.Get()
	if quit {
		return false
	}
	defer q.Done(key)
	err := syncFn(ctx, key)
	switch {
	case err == nil:
		q.Forget(key)
	case q.NumRequeues(key) < maxRetries && ctx.Err() == nil:
		log.Debug("sync failed; retrying", "key", key, "err", err)
		q.AddRateLimited(key)
	default:
		log.Warn("sync failed; dropping until the next event", "key", key, "err", err)
		q.Forget(key)
	}
	return true
}

// Unwrap returns the object of a delete event, looking inside tombstones.
func Unwrap(obj any) any {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		return t.Obj
	}
	return obj
}

// Key is the namespace/name key of an object.
func Key(o metav1.Object) string {
	if o.GetNamespace() == "" {
		return o.GetName()
	}
	return o.GetNamespace() + "/" + o.GetName()
}

// NewControllerRef is the owner reference a controller sets on what it owns.
func NewControllerRef(owner metav1.Object, gvk schema.GroupVersionKind) *metav1.OwnerReference {
	t := true
	return &metav1.OwnerReference{APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind,
		Name: owner.GetName(), UID: owner.GetUID(), Controller: &t, BlockOwnerDeletion: &t}
}

// Claimer adopts and releases objects as upstream's ControllerRefManager:
// an owned object that stops matching is released, an orphan that matches
// is adopted unless the owner is being deleted.
type Claimer[T metav1.Object] struct {
	Owner    metav1.Object
	Selector labels.Selector
	// CanAdopt re-reads the owner from the API server (not the cache) and
	// fails if it is gone or being deleted; called once, before an adoption.
	CanAdopt func(ctx context.Context) error
	// Adopt and Release write the object with the controllerRef added or
	// removed.
	Adopt, Release func(ctx context.Context, obj T) error

	once     sync.Once
	adoptErr error
}

// Claim returns the objects the owner controls after adopting and releasing.
func (m *Claimer[T]) Claim(ctx context.Context, objs []T) ([]T, error) {
	var claimed []T
	var errs []error
	for _, o := range objs {
		ref := metav1.GetControllerOfNoCopy(o)
		matches := m.Selector.Matches(labels.Set(o.GetLabels()))
		switch {
		case ref != nil && ref.UID != m.Owner.GetUID():
			// owned by someone else
		case ref != nil && matches:
			claimed = append(claimed, o)
		case ref != nil:
			if m.Owner.GetDeletionTimestamp() != nil {
				continue // upstream leaves them to the garbage collector
			}
			if err := m.Release(ctx, o); err != nil && !apierrors.IsNotFound(err) {
				errs = append(errs, fmt.Errorf("release %s: %w", o.GetName(), err))
			}
		case matches && m.Owner.GetDeletionTimestamp() == nil && o.GetDeletionTimestamp() == nil:
			m.once.Do(func() { m.adoptErr = m.CanAdopt(ctx) })
			if m.adoptErr != nil {
				errs = append(errs, m.adoptErr)
				continue
			}
			if err := m.Adopt(ctx, o); err != nil {
				if !apierrors.IsNotFound(err) {
					errs = append(errs, fmt.Errorf("adopt %s: %w", o.GetName(), err))
				}
				continue
			}
			claimed = append(claimed, o)
		}
	}
	return claimed, errors.Join(errs...)
}

// SetControllerRef returns refs with ref added (replacing one with its UID).
func SetControllerRef(refs []metav1.OwnerReference, ref *metav1.OwnerReference) []metav1.OwnerReference {
	return append(RemoveOwnerRef(refs, ref.UID), *ref)
}

// RemoveOwnerRef returns refs without the one to uid.
func RemoveOwnerRef(refs []metav1.OwnerReference, uid types.UID) []metav1.OwnerReference {
	out := make([]metav1.OwnerReference, 0, len(refs))
	for _, r := range refs {
		if r.UID != uid {
			out = append(out, r)
		}
	}
	return out
}

// Resync is how often informers replay their caches so that every object
// is reconciled periodically, even without events.
const Resync = 5 * time.Minute

// NewClaimer builds the Claimer every controller needs: adoption is
// allowed while the owner, re-read with getOwner, is the same object and
// not being deleted; adopting and releasing write a copy of the object
// (copyObj) with the controllerRef set or removed through update.
func NewClaimer[T metav1.Object](owner metav1.Object, kind schema.GroupVersionKind, sel labels.Selector,
	getOwner func(ctx context.Context) (metav1.Object, error),
	copyObj func(T) T, update func(ctx context.Context, obj T) error) *Claimer[T] {
	return &Claimer[T]{
		Owner:    owner,
		Selector: sel,
		CanAdopt: func(ctx context.Context) error {
			fresh, err := getOwner(ctx)
			if err != nil {
				return err
			}
			if fresh.GetUID() != owner.GetUID() || fresh.GetDeletionTimestamp() != nil {
				return fmt.Errorf("%s %s/%s is gone or being deleted: not adopting",
					strings.ToLower(kind.Kind), owner.GetNamespace(), owner.GetName())
			}
			return nil
		},
		Adopt: func(ctx context.Context, obj T) error {
			c := copyObj(obj)
			c.SetOwnerReferences(SetControllerRef(c.GetOwnerReferences(), NewControllerRef(owner, kind)))
			return update(ctx, c)
		},
		Release: func(ctx context.Context, obj T) error {
			c := copyObj(obj)
			c.SetOwnerReferences(RemoveOwnerRef(c.GetOwnerReferences(), owner.GetUID()))
			return update(ctx, c)
		},
	}
}
