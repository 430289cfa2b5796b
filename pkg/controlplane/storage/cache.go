package storage

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// cacheEvent is one change of one key, as the cache saw it. Objects carry
// their resourceVersion and are shared: watchers send deep copies.
type cacheEvent struct {
	typ  watch.EventType // Added, Modified, Deleted, or Bookmark (only in watcher queues)
	key  string
	rv   int64
	obj  runtime.Object // state after the event; nil for Deleted
	prev runtime.Object // state before the event; nil for Added
	// objEnc and prevEnc are the encodings of obj and of prev (at rv) that
	// shared watchers reuse (SharedObject); nil means encode per watcher.
	objEnc, prevEnc *encoding
}

// watchCache is the in-memory mirror of the resource's prefix: the current
// objects, the revision it has reached, a ring of recent events for watch
// resume, and the watchers it fans events out to. One mutex guards it all,
// so registering a watcher is atomic with respect to incoming events.
type watchCache struct {
	log        *slog.Logger
	firstReady chan struct{} // closed after the first list
	firstOnce  sync.Once

	mu      sync.Mutex
	ready   bool          // false while (re)listing
	changed chan struct{} // closed and replaced whenever rv or ready changes
	rv      int64         // revision reached
	listRV  int64         // revision of the last list
	objects map[string]runtime.Object

	ring    []cacheEvent // circular buffer of the last len(ring) events
	start   int          // index of the oldest event
	size    int          // events held
	evicted bool         // an event was dropped since the last list

	watchers map[int]*cacheWatcher
	nextID   int
}

func newWatchCache(capacity int, log *slog.Logger) *watchCache {
	return &watchCache{
		log:        log,
		firstReady: make(chan struct{}),
		changed:    make(chan struct{}),
		objects:    map[string]runtime.Object{},
		ring:       make([]cacheEvent, capacity),
		watchers:   map[int]*cacheWatcher{},
	}
}

// Run lists the resource's prefix into the cache, then follows it with ONE
// etcd watch until ctx ends. On compaction or any watch error it terminates
// all watchers (clients re-watch, as with upstream) and lists again.
func (s *Store) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() { s.sendBookmarks(ctx) })

	for {
		rev, err := s.relist(ctx)
		if err == nil {
			err = s.follow(ctx, rev)
		}
		s.cache.invalidate()
		if ctx.Err() != nil {
			return nil
		}
		wait := time.Second
		if errors.Is(err, rpctypes.ErrCompacted) {
			wait = 0 // the cache fell behind a compaction: list again now
		}
		s.log.Warn("watch cache restarting", "err", err, "after", wait)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
	}
}

// relist reads every object under the prefix and replaces the cache.
func (s *Store) relist(ctx context.Context) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	start := time.Now()
	resp, err := s.client.Get(ctx, s.resourcePrefix, clientv3.WithPrefix())
	s.ops.list.record(start, err)
	if err != nil {
		return 0, fmt.Errorf("list %s: %w", s.resourcePrefix, err)
	}
	objects := make(map[string]runtime.Object, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		obj, err := s.decodeKV(kv)
		if err != nil {
			s.log.Error("skipping undecodable object", "key", string(kv.Key), "err", err)
			continue
		}
		objects[string(kv.Key)] = obj
	}
	s.cache.replace(objects, resp.Header.Revision)
	s.log.Debug("watch cache listed", "objects", len(objects), "rv", resp.Header.Revision)
	return resp.Header.Revision, nil
}

// follow feeds the cache from one etcd watch starting after rev. It returns
// when the watch fails or ctx ends.
func (s *Store) follow(ctx context.Context, rev int64) error {
	// RequireLeader: the watch fails (and we re-list) rather than hang when
	// the member loses its leader. requestProgress uses the same metadata so
	// its request reaches this watch's stream.
	ctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	defer cancel()
	s.etcdWatches.Add(1)
	defer s.etcdWatches.Add(-1)

	wch := s.client.Watch(ctx, s.resourcePrefix, clientv3.WithPrefix(), clientv3.WithRev(rev+1), clientv3.WithProgressNotify())
	for resp := range wch {
		if err := resp.Err(); err != nil {
			return err
		}
		if resp.IsProgressNotify() {
			s.cache.progress(resp.Header.Revision)
			continue
		}
		if len(resp.Events) == 0 {
			continue // the "created" response
		}
		events := make([]cacheEvent, 0, len(resp.Events))
		for _, ev := range resp.Events {
			ce := cacheEvent{typ: watch.Deleted, key: string(ev.Kv.Key), rv: ev.Kv.ModRevision}
			if ev.Type == mvccpb.Event_PUT {
				obj, err := s.decodeKV(ev.Kv)
				if err != nil {
					s.log.Error("skipping undecodable event", "key", ce.key, "err", err)
					continue
				}
				ce.typ, ce.obj, ce.objEnc = watch.Modified, obj, newEncoding()
			}
			events = append(events, ce)
		}
		s.cache.apply(events, resp.Header.Revision)
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return errors.New("etcd watch channel closed")
}

// sendBookmarks asks etcd for a progress notification (so the cache's
// revision advances even when this resource is idle) and queues a bookmark
// to every watcher that allows them, every bookmark period.
func (s *Store) sendBookmarks(ctx context.Context) {
	t := time.NewTicker(s.bookmarkPeriod)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			s.requestProgress(ctx)
			s.cache.dispatchBookmark()
		}
	}
}

// requestProgress asks etcd to tell the cache's watch the current revision.
func (s *Store) requestProgress(ctx context.Context) {
	ctx, cancel := context.WithTimeout(clientv3.WithRequireLeader(ctx), requestTimeout)
	defer cancel()
	if err := s.client.RequestProgress(ctx); err != nil && ctx.Err() == nil {
		s.log.Debug("etcd progress request failed", "err", err)
	}
}

// waitFresh waits until the cache is ready and has reached rv, nudging etcd
// for progress notifications. Upstream gives up after 3s with a 504
// (ResourceVersionTooLarge), or 429 while the cache is initializing.
func (s *Store) waitFresh(ctx context.Context, rv int64) error {
	timeout := time.NewTimer(freshTimeout)
	defer timeout.Stop()
	nudge := time.NewTicker(freshTimeout / 10)
	defer nudge.Stop()
	nudged := false
	for {
		ready, cur, changed := s.cache.state()
		if ready && cur >= rv {
			return nil
		}
		if ready && !nudged {
			s.requestProgress(ctx)
			nudged = true
		}
		select {
		case <-changed:
		case <-nudge.C:
			nudged = false
		case <-ctx.Done():
			return apierrors.NewTimeoutError(fmt.Sprintf("waiting for the %s cache: %v", s.resource, ctx.Err()), 1)
		case <-timeout.C:
			if !ready {
				return apierrors.NewTooManyRequests("storage is (re)initializing", 1)
			}
			return tooLargeRVError(rv, cur)
		}
	}
}

// currentEtcdRV is etcd's current revision (for consistent reads from cache).
func (s *Store) currentEtcdRV(ctx context.Context) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	start := time.Now()
	resp, err := s.client.Get(ctx, s.resourcePrefix, clientv3.WithCountOnly(), clientv3.WithLimit(1))
	s.ops.currentRV.record(start, err)
	if err != nil {
		return 0, s.etcdError("get", s.resourcePrefix, err)
	}
	return resp.Header.Revision, nil
}

// --- watchCache methods; each takes the lock ---

// broadcastLocked wakes everybody waiting on the cache's state.
func (c *watchCache) broadcastLocked() {
	close(c.changed)
	c.changed = make(chan struct{})
}

func (c *watchCache) state() (ready bool, rv int64, changed <-chan struct{}) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ready, c.rv, c.changed
}

func (c *watchCache) currentRV() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.rv
}

// replace installs a fresh list; the event history restarts at rv.
func (c *watchCache) replace(objects map[string]runtime.Object, rv int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.objects = objects
	c.rv, c.listRV = rv, rv
	c.start, c.size, c.evicted = 0, 0, false
	clear(c.ring)
	c.ready = true
	c.broadcastLocked()
	c.firstOnce.Do(func() { close(c.firstReady) })
}

// invalidate marks the cache not ready and terminates all watchers: they
// would miss the events between the failed watch and the next list.
func (c *watchCache) invalidate() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ready = false
	for id, w := range c.watchers {
		delete(c.watchers, id)
		w.terminate()
	}
	c.broadcastLocked()
}

// progress records that etcd has sent every event up to rv.
func (c *watchCache) progress(rv int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if rv > c.rv {
		c.rv = rv
		c.broadcastLocked()
	}
}

// apply records events (obj set for puts, nil for deletes), fills in their
// type and previous state, appends them to the ring and fans them out.
func (c *watchCache) apply(events []cacheEvent, rv int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, ev := range events {
		ev.prev = c.objects[ev.key]
		if ev.prev != nil {
			ev.prevEnc = newEncoding()
		}
		switch {
		case ev.typ == watch.Deleted && ev.prev == nil:
			continue // never seen (e.g. it was undecodable)
		case ev.typ == watch.Deleted:
			delete(c.objects, ev.key)
		case ev.prev == nil:
			ev.typ = watch.Added
			c.objects[ev.key] = ev.obj
		default:
			c.objects[ev.key] = ev.obj
		}
		c.pushLocked(ev)
		c.dispatchLocked(ev)
	}
	if rv > c.rv {
		c.rv = rv
	}
	c.broadcastLocked()
}

func (c *watchCache) pushLocked(ev cacheEvent) {
	if c.size == len(c.ring) {
		c.ring[c.start] = cacheEvent{}
		c.start = (c.start + 1) % len(c.ring)
		c.size--
		c.evicted = true
	}
	c.ring[(c.start+c.size)%len(c.ring)] = ev
	c.size++
}

// eventsSinceLocked returns the ring's events after rv, or 410 Gone if the
// ring no longer reaches back to rv (upstream's rule and message).
func (c *watchCache) eventsSinceLocked(rv int64) ([]cacheEvent, error) {
	oldest := c.listRV + 1 // nothing dropped since the list: history starts after it
	if c.evicted {
		oldest = c.ring[c.start].rv
	}
	if rv < oldest-1 {
		return nil, apierrors.NewResourceExpired(fmt.Sprintf("too old resource version: %d (%d)", rv, oldest-1))
	}
	var out []cacheEvent
	for i := range c.size {
		if ev := c.ring[(c.start+i)%len(c.ring)]; ev.rv > rv {
			out = append(out, ev)
		}
	}
	return out, nil
}

// dispatchLocked queues ev to every watcher without ever blocking: a
// watcher whose queue is full is terminated (its client re-watches).
func (c *watchCache) dispatchLocked(ev cacheEvent) {
	for id, w := range c.watchers {
		select {
		case w.input <- ev:
		default:
			c.log.Warn("terminating slow watcher", "watcher", id, "queued", len(w.input))
			delete(c.watchers, id)
			w.terminate()
		}
	}
}

// dispatchBookmark queues a bookmark at the current revision to watchers
// that allow them. Through the same queue as events, so a bookmark never
// overtakes an event it covers. A full queue just skips the bookmark.
func (c *watchCache) dispatchBookmark() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.ready {
		return
	}
	ev := cacheEvent{typ: watch.Bookmark, rv: c.rv}
	for _, w := range c.watchers {
		if !w.allowBookmarks {
			continue
		}
		select {
		case w.input <- ev:
		default:
		}
	}
}

// snapshot returns the current objects under prefix that pass filter, in
// key order, with the revision they are current at.
func (c *watchCache) snapshot(prefix string, filter func(runtime.Object) bool) ([]string, []runtime.Object, int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	keys := c.sortedKeysLocked(prefix)
	objs := make([]runtime.Object, 0, len(keys))
	kept := keys[:0]
	for _, k := range keys {
		if obj := c.objects[k]; filter == nil || filter(obj) {
			kept = append(kept, k)
			objs = append(objs, obj)
		}
	}
	return kept, objs, c.rv
}

func (c *watchCache) sortedKeysLocked(prefix string) []string {
	var keys []string
	for k := range c.objects {
		if strings.HasPrefix(k, prefix) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	return keys
}

func (c *watchCache) watcherCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.watchers)
}
