package endpointslice

import (
	"sync"

	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/types"
)

// deletionExpected marks a slice this controller deleted.
const deletionExpected = -1

// generationTracker remembers, per service, the generation of every slice
// this controller wrote (or that it deleted one), as upstream's
// EndpointSliceTracker: a slice event it expects is its own echo, and a
// cache that has not seen all of its writes yet is stale.
type generationTracker struct {
	mu        sync.Mutex
	byService map[types.NamespacedName]map[types.UID]int64
	uids      map[types.NamespacedName]types.UID // the service the generations are of
}

func newGenerationTracker() *generationTracker {
	return &generationTracker{byService: map[types.NamespacedName]map[types.UID]int64{}, uids: map[types.NamespacedName]types.UID{}}
}

func serviceOf(s *discovery.EndpointSlice) types.NamespacedName {
	return types.NamespacedName{Namespace: s.Namespace, Name: s.Labels[discovery.LabelServiceName]}
}

func (t *generationTracker) has(s *discovery.EndpointSlice) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	_, ok := t.byService[serviceOf(s)][s.UID]
	return ok
}

// shouldSync: a slice not written by this controller, or changed since.
func (t *generationTracker) shouldSync(s *discovery.EndpointSlice) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	g, ok := t.byService[serviceOf(s)][s.UID]
	return !ok || s.Generation > g
}

// stale reports whether the cached slices lag behind this controller's
// writes: an older generation, a slice it deleted, or one it wrote that
// is missing. Generations recorded for an earlier service of the same
// name are dropped.
func (t *generationTracker) stale(svc *v1.Service, slices []*discovery.EndpointSlice) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	nn := types.NamespacedName{Namespace: svc.Namespace, Name: svc.Name}
	if uid, ok := t.uids[nn]; ok && uid != "" && svc.UID != "" && uid != svc.UID {
		delete(t.byService, nn)
	}
	t.uids[nn] = svc.UID
	gens, ok := t.byService[nn]
	if !ok {
		return false
	}
	seen := map[types.UID]bool{}
	for _, s := range slices {
		seen[s.UID] = true
		if g, ok := gens[s.UID]; ok && (g == deletionExpected || g > s.Generation) {
			return true
		}
	}
	for uid, g := range gens {
		if g != deletionExpected && !seen[uid] {
			return true
		}
	}
	return false
}

// wrote records the generation of a slice this controller created or
// updated.
func (t *generationTracker) wrote(s *discovery.EndpointSlice) { t.set(s, s.Generation) }

// deleted records that this controller deleted the slice.
func (t *generationTracker) deleted(s *discovery.EndpointSlice) { t.set(s, deletionExpected) }

func (t *generationTracker) set(s *discovery.EndpointSlice, g int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	nn := serviceOf(s)
	if t.byService[nn] == nil {
		t.byService[nn] = map[types.UID]int64{}
	}
	t.byService[nn][s.UID] = g
}

// handleDeletion forgets a deleted slice and reports whether this
// controller deleted it.
func (t *generationTracker) handleDeletion(s *discovery.EndpointSlice) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	gens := t.byService[serviceOf(s)]
	g, ok := gens[s.UID]
	delete(gens, s.UID)
	return !ok || g == deletionExpected
}

// forget drops a deleted service.
func (t *generationTracker) forget(ns, name string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	nn := types.NamespacedName{Namespace: ns, Name: name}
	delete(t.byService, nn)
	delete(t.uids, nn)
}
