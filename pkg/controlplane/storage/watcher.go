package storage

import (
	"context"
	"strings"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// WatchOptions mirror metav1.ListOptions for watches. Filter (may be nil)
// selects objects; it must not modify the object it is given.
type WatchOptions struct {
	ResourceVersion   string
	AllowBookmarks    bool
	Filter            func(runtime.Object) bool
	SendInitialEvents *bool
	// Shared delivers ADDED, MODIFIED and DELETED objects as
	// *SharedObject: the cache's own, with one encoding for every watcher,
	// instead of a copy per watcher.
	Shared bool
}

// Watch serves a watch of namespace ("" = all) from the cache; it never
// opens an etcd watch of its own.
//
//   - resourceVersion "" or "0": synthetic ADDED events for the current
//     objects ("" first waits until the cache has reached etcd's current
//     revision), then live events;
//   - "N": every event after N from the cache's ring, then live events; 410
//     Gone if the ring no longer reaches back to N.
//
// SendInitialEvents overrides whether the current objects are sent first
// (upstream WatchList); when true, a bookmark annotated
// "k8s.io/initial-events-end" follows them. A watcher that does not keep up
// with its queue is closed; its client re-watches from its last
// resourceVersion. The watch ends on Stop, when ctx ends, or when the cache
// restarts.
func (s *Store) Watch(ctx context.Context, namespace string, opts WatchOptions) (watch.Interface, error) {
	prefix, err := s.listPrefix(namespace)
	if err != nil {
		return nil, err
	}
	var rv int64
	initialState := opts.ResourceVersion == "" || opts.ResourceVersion == "0"
	switch opts.ResourceVersion {
	case "":
		// Consistent: the initial state is at least etcd's current revision.
		if rv, err = s.currentEtcdRV(ctx); err != nil {
			return nil, err
		}
	case "0":
	default:
		if rv, err = parseRV(opts.ResourceVersion); err != nil {
			return nil, err
		}
	}
	if opts.SendInitialEvents != nil {
		initialState = *opts.SendInitialEvents
	}
	if err := s.waitFresh(ctx, rv); err != nil {
		return nil, err
	}
	w := &cacheWatcher{
		cache:          s.cache,
		newFunc:        s.newFunc,
		prefix:         prefix,
		filter:         opts.Filter,
		allowBookmarks: opts.AllowBookmarks,
		shared:         opts.Shared,
		input:          make(chan cacheEvent, s.watchBuffer),
		result:         make(chan watch.Event),
		done:           make(chan struct{}),
	}
	initial, err := s.cache.register(w, initialState, rv)
	if err != nil {
		return nil, err
	}
	sendEnd := opts.SendInitialEvents != nil && *opts.SendInitialEvents
	go w.run(ctx, initial, sendEnd)
	return w, nil
}

// register adds w to the cache and returns the events it must send first:
// the current objects (initialState) or the ring's events after rv. Both are
// taken under the cache lock, so w misses no event and sees none twice.
func (c *watchCache) register(w *cacheWatcher, initialState bool, rv int64) ([]cacheEvent, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.ready {
		return nil, apierrors.NewTooManyRequests("storage is (re)initializing", 1)
	}
	var initial []cacheEvent
	switch {
	case initialState:
		for _, k := range c.sortedKeysLocked(w.prefix) {
			obj := c.objects[k]
			initial = append(initial, cacheEvent{typ: watch.Added, key: k, rv: c.rv, obj: obj})
		}
		w.minRV = c.rv
	case rv == 0:
		w.minRV = c.rv // "0" or "" without initial events: from now on
	default:
		events, err := c.eventsSinceLocked(rv)
		if err != nil {
			return nil, err
		}
		initial = events
		w.minRV = rv
	}
	w.id = c.nextID
	c.nextID++
	c.watchers[w.id] = w
	return initial, nil
}

// cacheWatcher is one client's watch. The cache pushes into input (never
// blocking); the watcher's goroutine filters, copies and delivers to result.
type cacheWatcher struct {
	cache          *watchCache
	newFunc        func() runtime.Object
	id             int
	prefix         string // key prefix of the watched namespace
	filter         func(runtime.Object) bool
	allowBookmarks bool
	shared         bool  // deliver *SharedObject
	minRV          int64 // events at or below it are already covered

	input    chan cacheEvent
	result   chan watch.Event
	done     chan struct{}
	doneOnce sync.Once
}

// ResultChan implements watch.Interface; it is closed when the watch ends.
func (w *cacheWatcher) ResultChan() <-chan watch.Event { return w.result }

// Stop implements watch.Interface; it is safe to call more than once.
func (w *cacheWatcher) Stop() {
	w.cache.mu.Lock()
	delete(w.cache.watchers, w.id)
	w.cache.mu.Unlock()
	w.terminate()
}

// terminate ends the watcher's goroutine; the caller has removed it from
// the cache (or is about to).
func (w *cacheWatcher) terminate() { w.doneOnce.Do(func() { close(w.done) }) }

func (w *cacheWatcher) run(ctx context.Context, initial []cacheEvent, sendInitialEnd bool) {
	defer close(w.result)
	for _, ev := range initial {
		if e, ok := w.convert(ev); ok && !w.send(ctx, e) {
			return
		}
	}
	if sendInitialEnd && !w.send(ctx, w.bookmark(w.minRV, true)) {
		return
	}
	for {
		select {
		case <-w.done:
			return
		case <-ctx.Done():
			w.Stop()
			return
		case ev := <-w.input:
			if ev.rv <= w.minRV {
				continue
			}
			if e, ok := w.convert(ev); ok && !w.send(ctx, e) {
				return
			}
		}
	}
}

func (w *cacheWatcher) send(ctx context.Context, e watch.Event) bool {
	select {
	case w.result <- e:
		return true
	case <-w.done:
		return false
	case <-ctx.Done():
		w.Stop()
		return false
	}
}

// convert turns a cache event into what this watcher sees, as upstream:
// an object that starts matching the filter is ADDED, one that stops
// matching is DELETED (previous state, at the event's revision), one that
// keeps matching is MODIFIED.
func (w *cacheWatcher) convert(ev cacheEvent) (watch.Event, bool) {
	if ev.typ == watch.Bookmark {
		return w.bookmark(ev.rv, false), w.allowBookmarks
	}
	cur := ev.typ != watch.Deleted && w.matches(ev.key, ev.obj)
	old := ev.prev != nil && w.matches(ev.key, ev.prev)
	switch {
	case cur && !old:
		return watch.Event{Type: watch.Added, Object: w.object(ev.obj, 0, ev.objEnc)}, true
	case cur && old:
		return watch.Event{Type: watch.Modified, Object: w.object(ev.obj, 0, ev.objEnc)}, true
	case old:
		return watch.Event{Type: watch.Deleted, Object: w.object(ev.prev, ev.rv, ev.prevEnc)}, true
	}
	return watch.Event{}, false
}

// object is what the watcher delivers of a cache object: the shared one,
// or a copy of its own (at rv when rv is non-zero).
func (w *cacheWatcher) object(obj runtime.Object, rv int64, enc *encoding) runtime.Object {
	s := &SharedObject{obj: obj, rv: rv, enc: enc}
	if w.shared {
		return s
	}
	return s.DeepCopyObject()
}

func (w *cacheWatcher) matches(key string, obj runtime.Object) bool {
	return strings.HasPrefix(key, w.prefix) && (w.filter == nil || w.filter(obj))
}

// bookmark is an empty object carrying only a resourceVersion (and, at the
// end of the initial events, upstream's annotation).
func (w *cacheWatcher) bookmark(rv int64, initialEnd bool) watch.Event {
	obj := w.newFunc()
	setRV(obj, rv)
	if initialEnd {
		if m, err := meta.Accessor(obj); err == nil {
			m.SetAnnotations(map[string]string{metav1.InitialEventsAnnotationKey: "true"})
		}
	}
	return watch.Event{Type: watch.Bookmark, Object: obj}
}
