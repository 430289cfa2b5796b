package objectmanager

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
)

// The kubelet's watch-based manager: a Get waits at most syncTimeout for
// the first list; watches unread for maxIdle (five sync periods, never
// below minIdle) are stopped every recycleInterval; a watch lasts at least
// minWatchTimeout before it is renewed.
const (
	syncTimeout     = time.Second
	minIdle         = time.Minute
	recycleInterval = time.Minute
	minWatchTimeout = 30 * time.Minute
)

// errSyncTimeout is upstream's wait timeout, which its error quotes.
var errSyncTimeout = errors.New("timed out waiting for the condition")

// watchStore is the Watch strategy: one reflector per referenced object.
type watchStore struct {
	kind        kind
	clock       clock.Clock
	maxIdle     time.Duration
	syncTimeout time.Duration
	log         *slog.Logger

	mu      sync.Mutex
	items   map[objectKey]*watchItem
	stopped bool           // the manager shut down: nothing starts again
	running sync.WaitGroup // the reflectors' goroutines
}

func newWatchStore(k kind, c clock.Clock, resync time.Duration, log *slog.Logger) *watchStore {
	return &watchStore{
		kind: k, clock: c, maxIdle: max(5*resync, minIdle), syncTimeout: syncTimeout,
		log: log.With("component", "objectmanager", "resource", k.resource.String()), items: map[objectKey]*watchItem{},
	}
}

// watchItem is one object's watch, shared by the pods that refer to it.
type watchItem struct {
	key  objectKey
	refs map[podKey]int
	// store holds what the watch saw; it outlives the reflector runs (an
	// immutable object stays readable after its watch stopped).
	store cache.Store
	lw    cache.ListerWatcher

	mu         sync.Mutex
	lastAccess time.Time
	running    bool
	immutable  bool
	stop       chan struct{} // closes the current run
	done       chan struct{} // closed when the current run returned
	// synced is closed once the current run listed the object; nil
	// while no run has (an immutable object's stays closed).
	synced chan struct{}
}

func (s *watchStore) newItem(key objectKey) *watchItem {
	sel := fields.OneTermEqualSelector("metadata.name", key.name).String()
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = sel
			return s.kind.list(ctx, key.namespace, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = sel
			return s.kind.watch(ctx, key.namespace, o)
		},
	}
	return &watchItem{
		key: key, refs: map[podKey]int{}, store: cache.NewStore(cache.MetaNamespaceKeyFunc),
		lw: cache.ToListWatcherWithWatchListSemantics(lw, s.kind.client),
	}
}

// startLocked runs a new reflector into the item's store once the
// previous run, if any, has returned. Caller holds it.mu.
func (s *watchStore) startLocked(it *watchItem) {
	stop, synced, done, prev := make(chan struct{}), make(chan struct{}), make(chan struct{}), it.done
	it.stop, it.synced, it.done, it.running = stop, synced, done, true
	var once sync.Once
	target := &syncingStore{Store: it.store, listed: func() { once.Do(func() { close(synced) }) }}
	r := cache.NewReflectorWithOptions(it.lw, s.kind.newObject(), target, cache.ReflectorOptions{
		Name:            fmt.Sprintf("object-%q/%q", it.key.namespace, it.key.name),
		MinWatchTimeout: minWatchTimeout, // renewing watches often would cost more than it saves
	})
	s.running.Add(1)
	go func() {
		defer s.running.Done()
		defer close(done)
		if prev != nil {
			<-prev
		}
		r.Run(stop)
	}()
}

// stopLocked ends the current run; a later read restarts it and waits for
// a new list, unless the object is immutable. Caller holds it.mu.
func (it *watchItem) stopLocked() bool {
	if !it.running {
		return false
	}
	it.running = false
	close(it.stop)
	if !it.immutable {
		it.synced = nil
	}
	return true
}

func (it *watchItem) stopWatch() bool {
	it.mu.Lock()
	defer it.mu.Unlock()
	return it.stopLocked()
}

// syncingStore tells its item when a list replaced the store's content.
type syncingStore struct {
	cache.Store
	listed func()
}

func (s *syncingStore) Replace(list []any, resourceVersion string) error {
	if err := s.Store.Replace(list, resourceVersion); err != nil {
		return err
	}
	s.listed()
	return nil
}

// addReference starts the object's watch on its first reference; the
// first read waits for it.
func (s *watchStore) addReference(ns, name string, from podKey) {
	key := objectKey{ns, name}
	s.mu.Lock()
	defer s.mu.Unlock()
	it := s.items[key]
	if it == nil {
		it = s.newItem(key)
		s.items[key] = it
		if !s.stopped {
			it.mu.Lock()
			s.startLocked(it)
			it.mu.Unlock()
		}
	}
	it.refs[from]++
}

// deleteReference stops and forgets the watch once no pod refers to it.
func (s *watchStore) deleteReference(ns, name string, from podKey) {
	key := objectKey{ns, name}
	s.mu.Lock()
	defer s.mu.Unlock()
	it := s.items[key]
	if it == nil {
		return
	}
	if it.refs[from]--; it.refs[from] <= 0 {
		delete(it.refs, from)
	}
	if len(it.refs) == 0 {
		it.stopWatch()
		delete(s.items, key)
	}
}

// get answers from the object's watch, (re)starting it when it was
// stopped for being idle and waiting up to syncTimeout for its list.
func (s *watchStore) get(ctx context.Context, ns, name string) (runtime.Object, error) {
	it, synced := s.touch(ns, name)
	if it == nil {
		return nil, notRegistered(ns, name)
	}
	if err := s.waitSynced(ctx, synced); err != nil {
		return nil, fmt.Errorf("failed to sync %s cache: %v", s.kind.resource.String(), err)
	}
	obj, exists, err := it.store.GetByKey(ns + "/" + name)
	if err != nil {
		return nil, err
	}
	if !exists {
		return nil, apierrors.NewNotFound(s.kind.resource, name)
	}
	o, ok := obj.(runtime.Object)
	if !ok {
		return nil, fmt.Errorf("unexpected object type: %v", obj)
	}
	if s.kind.immutable(o) {
		// It cannot change any more: what the store holds stays the answer.
		it.mu.Lock()
		it.immutable = true
		if it.stopLocked() {
			s.log.Debug("Stopped watching for changes - object is immutable", "namespace", ns, "name", name)
		}
		it.mu.Unlock()
	}
	return o, nil
}

// touch records the read and restarts a stopped watch (not after
// shutdown, which s.mu orders with this); it returns the item and the
// channel its current run closes once listed.
func (s *watchStore) touch(ns, name string) (*watchItem, <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	it := s.items[objectKey{ns, name}]
	if it == nil {
		return nil, nil
	}
	it.mu.Lock()
	defer it.mu.Unlock()
	// Touched whether the read succeeds or not, so that a slow first list
	// is not taken for an idle watch.
	it.lastAccess = s.clock.Now()
	if !s.stopped && !it.running && !it.immutable {
		s.startLocked(it)
	}
	return it, it.synced
}

func (s *watchStore) waitSynced(ctx context.Context, synced <-chan struct{}) error {
	select {
	case <-synced:
		return nil
	default:
	}
	t := time.NewTimer(s.syncTimeout)
	defer t.Stop()
	select {
	case <-synced: // nil (a stopped manager): waits for the timeout
		return nil
	case <-t.C:
		return errSyncTimeout
	case <-ctx.Done():
		return ctx.Err()
	}
}

// recycleIdle stops the watches that listed their object and were not
// read for maxIdle: the objects only env refers to, read when containers
// start. A later read starts them again.
func (s *watchStore) recycleIdle() {
	now := s.clock.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	for key, it := range s.items {
		if it.stopIfIdle(now, s.maxIdle) {
			s.log.Debug("Not acquired for long time, Stopped watching for changes", "namespace", key.namespace, "name", key.name, "maxIdleTime", s.maxIdle)
		}
	}
}

func (it *watchItem) stopIfIdle(now time.Time, maxIdle time.Duration) bool {
	it.mu.Lock()
	defer it.mu.Unlock()
	// A watch still listing is not stopped: against a busy API server the
	// list would have to start over.
	if !it.running || !closed(it.synced) || !now.After(it.lastAccess.Add(maxIdle)) {
		return false
	}
	return it.stopLocked()
}

// shutdown stops every watch for good and waits for the reflectors.
func (s *watchStore) shutdown() {
	s.mu.Lock()
	s.stopped = true
	for _, it := range s.items {
		it.stopWatch()
	}
	s.mu.Unlock()
	s.running.Wait()
}

func closed(c <-chan struct{}) bool {
	if c == nil {
		return false
	}
	select {
	case <-c:
		return true
	default:
		return false
	}
}
