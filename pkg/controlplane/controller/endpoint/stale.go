package endpoint

import (
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// staleTracker remembers, per Endpoints object, the resourceVersion this
// controller last wrote over: the informer returning it again means its
// cache lags behind (upstream's staleEndpointsTracker).
type staleTracker struct {
	mu sync.Mutex
	rv map[types.NamespacedName]string
}

func newStaleTracker() *staleTracker {
	return &staleTracker{rv: map[types.NamespacedName]string{}}
}

func (t *staleTracker) mark(ep *v1.Endpoints) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.rv[types.NamespacedName{Namespace: ep.Namespace, Name: ep.Name}] = ep.ResourceVersion
}

func (t *staleTracker) isStale(ep *v1.Endpoints) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	rv, ok := t.rv[types.NamespacedName{Namespace: ep.Namespace, Name: ep.Name}]
	return ok && rv == ep.ResourceVersion
}

func (t *staleTracker) forget(ns, name string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.rv, types.NamespacedName{Namespace: ns, Name: name})
}
