package replicaset

import (
	"sync"
	"time"
)

// expectationsTimeout bounds how long a sync waits for the cache to show
// its own creations and deletions (upstream's ExpectationsTimeout).
const expectationsTimeout = 5 * time.Minute

// expectations records, per ReplicaSet key, the pod creations still to be
// observed and the pod keys whose deletion is still to be observed, so a
// sync does not act twice while the informer cache catches up (upstream's
// UIDTrackingControllerExpectations).
type expectations struct {
	mu  sync.Mutex
	now func() time.Time
	m   map[string]*expectation
}

type expectation struct {
	adds int
	dels map[string]bool
	set  time.Time
}

func newExpectations(now func() time.Time) *expectations {
	return &expectations{now: now, m: map[string]*expectation{}}
}

// satisfied reports whether a sync may act on rsKey.
func (e *expectations) satisfied(rsKey string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	x := e.m[rsKey]
	return x == nil || (x.adds <= 0 && len(x.dels) == 0) || e.now().Sub(x.set) > expectationsTimeout
}

func (e *expectations) expectCreations(rsKey string, n int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.m[rsKey] = &expectation{adds: n, dels: map[string]bool{}, set: e.now()}
}

func (e *expectations) expectDeletions(rsKey string, podKeys []string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	x := &expectation{dels: map[string]bool{}, set: e.now()}
	for _, k := range podKeys {
		x.dels[k] = true
	}
	e.m[rsKey] = x
}

func (e *expectations) creationObserved(rsKey string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if x := e.m[rsKey]; x != nil {
		x.adds--
	}
}

func (e *expectations) deletionObserved(rsKey, podKey string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if x := e.m[rsKey]; x != nil {
		delete(x.dels, podKey)
	}
}

func (e *expectations) forget(rsKey string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.m, rsKey)
}
