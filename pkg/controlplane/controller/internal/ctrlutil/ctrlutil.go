package ctrlutil

import (
	"context"
	"encoding/json"
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

	"github.com/nodeagent/nodeagent/pkg/crash"
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
	err := syncGuarded(ctx, log, key, syncFn)
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

// syncGuarded runs syncFn; a panic in it is logged at error with the key,
// counted, and retried as a failed sync, so that one bad object does not
// stop the other controllers, the API server and etcd sharing the process.
func syncGuarded[T comparable](ctx context.Context, log *slog.Logger, key T, syncFn func(context.Context, T) error) (err error) {
	if crash.Do(log, panicComponent, fmt.Sprint(key), func() { err = syncFn(ctx, key) }) {
		return errSyncPanicked
	}
	return err
}

// panicComponent labels the controllers' recovered panics.
const panicComponent = "controller"

var errSyncPanicked = errors.New("sync panicked")

// EventHandler guards an informer's callbacks: a panic skips that
// notification and is logged at error with the object.
func EventHandler(log *slog.Logger, h cache.ResourceEventHandler) cache.ResourceEventHandler {
	return crash.EventHandler(log, panicComponent, h)
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
	// Adopt and Release add or remove the controllerRef on the object.
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

// NewClaimer builds the Claimer every controller needs, as upstream's
// ControllerRefManager: adoption is allowed while the owner, re-read with
// getOwner, is the same object and not being deleted; adopting and
// releasing are strategic merge patches of metadata.ownerReferences sent
// through patch, carrying the object's UID so that they fail on an object
// deleted and recreated under the same name.
func NewClaimer[T metav1.Object](owner metav1.Object, kind schema.GroupVersionKind, sel labels.Selector,
	getOwner func(ctx context.Context) (metav1.Object, error),
	patch func(ctx context.Context, name string, data []byte) error) *Claimer[T] {
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
			data, err := AdoptPatch(owner, kind, obj.GetUID())
			if err != nil {
				return err
			}
			return patch(ctx, obj.GetName(), data)
		},
		Release: func(ctx context.Context, obj T) error {
			data, err := ReleasePatch(owner.GetUID(), obj.GetUID())
			if err != nil {
				return err
			}
			err = patch(ctx, obj.GetName(), data)
			if apierrors.IsInvalid(err) {
				// No such owner reference any more, or another object
				// under the name: nothing of ours to release (upstream
				// ignores it too).
				return nil
			}
			return err
		},
	}
}

// patchMeta is the metadata of an ownerReferences patch; the UID is a
// precondition (the API server rejects a changed UID).
type patchMeta struct {
	OwnerReferences []any     `json:"ownerReferences"`
	UID             types.UID `json:"uid"`
}

// AdoptPatch adds owner's controllerRef to the object with UID uid.
func AdoptPatch(owner metav1.Object, kind schema.GroupVersionKind, uid types.UID) ([]byte, error) {
	return json.Marshal(map[string]patchMeta{"metadata": {
		OwnerReferences: []any{NewControllerRef(owner, kind)},
		UID:             uid,
	}})
}

// ReleasePatch removes the owner reference to ownerUID from the object
// with UID uid.
func ReleasePatch(ownerUID, uid types.UID) ([]byte, error) {
	return json.Marshal(map[string]patchMeta{"metadata": {
		OwnerReferences: []any{map[string]string{"$patch": "delete", "uid": string(ownerUID)}},
		UID:             uid,
	}})
}
