package objectmanager

import (
	"context"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
)

// podKey identifies a registered pod (a pod recreated under the same name
// is another one).
type podKey struct {
	namespace, name string
	uid             types.UID
}

func keyOf(pod *v1.Pod) podKey { return podKey{pod.Namespace, pod.Name, pod.UID} }

// store keeps one kind's objects for the pods that refer to them.
type store interface {
	addReference(ns, name string, from podKey)
	deleteReference(ns, name string, from podKey)
	get(ctx context.Context, ns, name string) (runtime.Object, error)
}

// objects tracks which registered pod refers to which objects of one
// kind, and tells the store what changed: upstream's cacheBasedManager.
type objects struct {
	store store
	names func(*v1.Pod) []string

	mu   sync.Mutex
	pods map[podKey]*v1.Pod
}

func newObjects(s store, names func(*v1.Pod) []string) *objects {
	return &objects{store: s, names: names, pods: map[podKey]*v1.Pod{}}
}

func (o *objects) nameSet(pod *v1.Pod) sets.Set[string] { return sets.New(o.names(pod)...) }

// register adds the references of a pod seen for the first time, and for
// one seen before only those its spec added (dropping those it lost), so
// that a pod's every sync does not refetch its objects (Cache).
func (o *objects) register(pod *v1.Pod) {
	names := o.nameSet(pod)
	key := keyOf(pod)
	o.mu.Lock()
	defer o.mu.Unlock()
	prev := o.pods[key]
	o.pods[key] = pod
	var before sets.Set[string]
	if prev != nil {
		before = o.nameSet(prev)
	}
	for name := range names {
		if !before.Has(name) {
			o.store.addReference(pod.Namespace, name, key)
		}
	}
	for name := range before {
		if !names.Has(name) {
			o.store.deleteReference(pod.Namespace, name, key)
		}
	}
}

// unregister drops every reference of the pod; unknown pods are a no-op.
func (o *objects) unregister(pod *v1.Pod) {
	key := keyOf(pod)
	o.mu.Lock()
	defer o.mu.Unlock()
	prev := o.pods[key]
	if prev == nil {
		return
	}
	delete(o.pods, key)
	for name := range o.nameSet(prev) {
		o.store.deleteReference(prev.Namespace, name, key)
	}
}
