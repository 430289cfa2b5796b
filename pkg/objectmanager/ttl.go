package objectmanager

import (
	"context"
	"strconv"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/clock"
)

// defaultTTL is the kubelet's caching managers' TTL when the node does not
// set one.
const defaultTTL = time.Minute

// TTLFromNode reads the TTL the node's node.alpha.kubernetes.io/ttl
// annotation sets (seconds; the TTL controller sets it by cluster size),
// as upstream's GetObjectTTLFromNodeFunc: no node, no annotation or a
// value that is not a number leave the default.
func TTLFromNode(getNode func(ctx context.Context) (*v1.Node, error)) func() (time.Duration, bool) {
	return func() (time.Duration, bool) {
		ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
		defer cancel()
		node, err := getNode(ctx)
		if err != nil || node == nil {
			return 0, false
		}
		s, ok := node.Annotations[v1.ObjectTTLAnnotationKey]
		if !ok {
			return 0, false
		}
		n, err := strconv.Atoi(s)
		if err != nil {
			return 0, false
		}
		return time.Duration(n) * time.Second, true
	}
}

// ttlStore is the Cache strategy: upstream's objectStore.
type ttlStore struct {
	kind  kind
	clock clock.Clock
	ttl   func() (time.Duration, bool) // nil: defaultTTL

	mu    sync.Mutex
	items map[objectKey]*ttlItem
}

type objectKey struct{ namespace, name string }

type ttlItem struct {
	refs int
	data *ttlData // nil: fetch on the next read
}

// ttlData is the last answer for one object; its lock is held across the
// fetch so that concurrent readers wait for one GET.
type ttlData struct {
	sync.Mutex
	object  runtime.Object
	err     error
	fetched time.Time
}

func newTTLStore(k kind, c clock.Clock, ttl func() (time.Duration, bool)) *ttlStore {
	return &ttlStore{kind: k, clock: c, ttl: ttl, items: map[objectKey]*ttlItem{}}
}

// addReference counts the reference and invalidates the object: a pod
// registered for the first time sees it as the API has it now.
func (s *ttlStore) addReference(ns, name string, _ podKey) {
	key := objectKey{ns, name}
	s.mu.Lock()
	defer s.mu.Unlock()
	it := s.items[key]
	if it == nil {
		it = &ttlItem{}
		s.items[key] = it
	}
	it.refs++
	it.data = nil
}

func (s *ttlStore) deleteReference(ns, name string, _ podKey) {
	key := objectKey{ns, name}
	s.mu.Lock()
	defer s.mu.Unlock()
	if it := s.items[key]; it != nil {
		if it.refs--; it.refs <= 0 {
			delete(s.items, key)
		}
	}
}

func (s *ttlStore) data(ns, name string) *ttlData {
	s.mu.Lock()
	defer s.mu.Unlock()
	it := s.items[objectKey{ns, name}]
	if it == nil {
		return nil
	}
	if it.data == nil {
		it.data = &ttlData{}
	}
	return it.data
}

func (s *ttlStore) fresh(d *ttlData) bool {
	ttl := defaultTTL
	if s.ttl != nil {
		if t, ok := s.ttl(); ok {
			ttl = t
		}
	}
	return s.clock.Now().Before(d.fetched.Add(ttl))
}

// get answers from the cache while the last object read is fresh, else
// fetches (after a NotFound too, as upstream). A failed fetch keeps the
// older answer; with none, the failure is returned and not kept.
func (s *ttlStore) get(ctx context.Context, ns, name string) (runtime.Object, error) {
	d := s.data(ns, name)
	if d == nil {
		return nil, notRegistered(ns, name)
	}
	d.Lock()
	defer d.Unlock()
	if d.err == nil && s.fresh(d) {
		return d.object, nil
	}
	var opts metav1.GetOptions
	if d.object != nil && d.err == nil {
		// A periodic refresh of an object read before: the API server's
		// cache is enough, as for the kubelet (FromApiserverCache).
		opts.ResourceVersion = "0"
	}
	fctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	obj, err := s.kind.get(fctx, ns, name, opts)
	notFound := apierrors.IsNotFound(err)
	if err != nil && !notFound && d.object == nil && d.err == nil {
		return nil, err
	}
	if (err == nil && !older(obj, d.object)) || notFound {
		if notFound {
			obj = nil
		}
		d.object, d.err, d.fetched = obj, err, s.clock.Now()
	}
	return d.object, d.err
}

// older reports whether a's resourceVersion is below b's (an API server
// cache behind the last answer).
func older(a, b runtime.Object) bool {
	if a == nil || b == nil {
		return false
	}
	av, aerr := resourceVersion(a)
	bv, berr := resourceVersion(b)
	return aerr == nil && berr == nil && av < bv
}

func resourceVersion(o runtime.Object) (uint64, error) {
	m, err := meta.Accessor(o)
	if err != nil {
		return 0, err
	}
	return strconv.ParseUint(m.GetResourceVersion(), 10, 64)
}
