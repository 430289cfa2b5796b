package storage

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

const (
	// requestTimeout bounds every single etcd request.
	requestTimeout = 15 * time.Second
	// freshTimeout is how long a read from the cache waits for the cache to
	// reach a requested resourceVersion (upstream waits 3s, then 504).
	freshTimeout = 3 * time.Second
	// defaultWatchBuffer is the per-watcher queue; a watcher whose queue is
	// full is terminated (upstream terminates slow watchers).
	defaultWatchBuffer = 1000
)

// Config describes the one resource a Store keeps.
type Config struct {
	Client     *clientv3.Client
	Prefix     string               // key prefix, default "/registry"
	Resource   schema.GroupResource // for errors and the key segment
	Namespaced bool
	NewFunc    func() runtime.Object // returns an empty typed object, e.g. &v1.Pod{}
	// CacheEvents is how many past events the cache keeps for watch resume
	// (default 1000); a watch from an older resourceVersion gets 410 Gone.
	CacheEvents int
	// BookmarkPeriod is the interval of watch bookmarks (default 1 minute).
	BookmarkPeriod time.Duration
	Logger         *slog.Logger
	// Metrics records the Store's etcd requests; register it before New
	// (nil records nothing).
	Metrics *Metrics
	// Transformer encrypts values at rest (nil stores plaintext).
	Transformer Transformer
	// TTL, when at least a second, gives every created or updated object
	// an etcd lease of that many whole seconds (upstream's TTLFunc, which
	// events have: kube-apiserver's --event-ttl), so that etcd deletes it
	// once the TTL passes without another write. Leases hands them out
	// (default: one of the Store's own).
	TTL    time.Duration
	Leases *Leases
	// Stored, when set, is the shape objects have in etcd when it is not
	// NewFunc's: a second API version served from another resource's keys
	// (events.k8s.io/v1 Events are core/v1 Events in etcd, as upstream's
	// cohabiting event resources). Set Prefix and Resource.Resource to
	// the stored resource's.
	Stored *Conversion
}

// Conversion turns the served form into the stored one and back.
type Conversion struct {
	New        func() runtime.Object // an empty stored object, e.g. &v1.Event{}
	ToStored   func(runtime.Object) runtime.Object
	FromStored func(runtime.Object) runtime.Object
}

// Transformer turns a stored value into the object's JSON and back, as
// upstream's value.Transformer; key is the etcd key. stale reports a value
// not written by the current provider, rewritten on the next update
// (encryption.Overrides.For returns these).
type Transformer interface {
	TransformFromStorage(data, key []byte) (plain []byte, stale bool, err error)
	TransformToStorage(plain, key []byte) ([]byte, error)
}

// Store is the storage of one resource. Create it with New and start its
// cache with Run.
type Store struct {
	client         *clientv3.Client
	resource       schema.GroupResource
	namespaced     bool
	newFunc        func() runtime.Object
	resourcePrefix string // "<Prefix>/<resource>/"
	bookmarkPeriod time.Duration
	watchBuffer    int
	log            *slog.Logger

	transformer Transformer // nil: plaintext
	ttlSeconds  int64       // 0: no lease
	leases      *Leases
	stored      *Conversion // nil: stored as served

	cache       *watchCache
	etcdWatches atomic.Int32 // open etcd watches; by design at most 1
	ops         etcdOps
}

// New validates cfg, fills defaults and returns a Store. It does not talk to
// etcd; Run does.
func New(cfg Config) (*Store, error) {
	if cfg.Client == nil {
		return nil, errors.New("storage: Config.Client is required")
	}
	if cfg.Resource.Resource == "" || strings.Contains(cfg.Resource.Resource, "/") {
		return nil, fmt.Errorf("storage: invalid Config.Resource %q", cfg.Resource.String())
	}
	if cfg.NewFunc == nil {
		return nil, errors.New("storage: Config.NewFunc is required")
	}
	if c := cfg.Stored; c != nil && (c.New == nil || c.ToStored == nil || c.FromStored == nil) {
		return nil, errors.New("storage: Config.Stored needs New, ToStored and FromStored")
	}
	if _, err := meta.Accessor(cfg.NewFunc()); err != nil {
		return nil, fmt.Errorf("storage: NewFunc must return an object with metadata: %w", err)
	}
	prefix := strings.TrimRight(cfg.Prefix, "/")
	if cfg.Prefix == "" {
		prefix = "/registry"
	}
	if cfg.CacheEvents <= 0 {
		cfg.CacheEvents = 1000
	}
	if cfg.BookmarkPeriod <= 0 {
		cfg.BookmarkPeriod = time.Minute
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	log := cfg.Logger.With("resource", cfg.Resource.String())
	ttlSeconds := int64(cfg.TTL / time.Second)
	if ttlSeconds > 0 && cfg.Leases == nil {
		cfg.Leases = NewLeases(cfg.Client)
	}
	return &Store{
		ttlSeconds:     ttlSeconds,
		leases:         cfg.Leases,
		client:         cfg.Client,
		resource:       cfg.Resource,
		namespaced:     cfg.Namespaced,
		newFunc:        cfg.NewFunc,
		resourcePrefix: prefix + "/" + cfg.Resource.Resource + "/",
		bookmarkPeriod: cfg.BookmarkPeriod,
		watchBuffer:    defaultWatchBuffer,
		log:            log,
		transformer:    cfg.Transformer,
		stored:         cfg.Stored,
		cache:          newWatchCache(cfg.CacheEvents, log),
		ops:            newEtcdOps(cfg.Metrics, cfg.Resource),
	}, nil
}

// Create stores obj if its key is absent. obj must have an empty
// resourceVersion. It returns the stored object with resourceVersion set to
// the creation revision. dryRun checks but does not write.
func (s *Store) Create(ctx context.Context, obj runtime.Object, dryRun bool) (runtime.Object, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	if m.GetResourceVersion() != "" {
		return nil, apierrors.NewBadRequest("resourceVersion should not be set on objects to be created")
	}
	key, err := s.objectKey(m.GetNamespace(), m.GetName())
	if err != nil {
		return nil, err
	}
	data, err := s.encode(obj)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	if dryRun {
		start := time.Now()
		resp, err := s.client.Get(ctx, key, clientv3.WithCountOnly())
		s.ops.get.record(start, err)
		if err != nil {
			return nil, s.etcdError("get", key, err)
		}
		if resp.Count > 0 {
			return nil, apierrors.NewAlreadyExists(s.resource, m.GetName())
		}
		return s.decode(data, 0)
	}
	put, err := s.put(ctx, key, data)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	resp, err := s.client.Txn(ctx).
		If(clientv3.Compare(clientv3.ModRevision(key), "=", 0)).
		Then(put).
		Commit()
	s.ops.create.record(start, err)
	if err != nil {
		return nil, s.etcdError("create", key, err)
	}
	if !resp.Succeeded {
		return nil, apierrors.NewAlreadyExists(s.resource, m.GetName())
	}
	return s.decode(data, resp.Header.Revision)
}

// Get reads one object from etcd (a linearizable read).
func (s *Store) Get(ctx context.Context, namespace, name string) (runtime.Object, error) {
	key, err := s.objectKey(namespace, name)
	if err != nil {
		return nil, err
	}
	state, err := s.read(ctx, key)
	if err != nil {
		return nil, err
	}
	if state == nil {
		return nil, apierrors.NewNotFound(s.resource, name)
	}
	return s.decode(state.data, state.rev)
}

// Update is upstream's GuaranteedUpdate: it reads the object, calls
// tryUpdate with a copy, and writes the result only if nobody wrote in
// between; on a lost race it re-reads and calls tryUpdate again, which
// decides (e.g. returns a Conflict when the caller's resourceVersion no
// longer holds). A result equal to the stored bytes is not written.
func (s *Store) Update(ctx context.Context, namespace, name string,
	tryUpdate func(existing runtime.Object) (runtime.Object, error), dryRun bool) (runtime.Object, error) {
	key, err := s.objectKey(namespace, name)
	if err != nil {
		return nil, err
	}
	state, err := s.read(ctx, key)
	if err != nil {
		return nil, err
	}
	for {
		if state == nil {
			return nil, apierrors.NewNotFound(s.resource, name)
		}
		existing, err := s.decode(state.data, state.rev)
		if err != nil {
			return nil, err
		}
		updated, err := tryUpdate(existing.DeepCopyObject())
		if err != nil {
			return nil, err
		}
		data, err := s.encode(updated)
		if err != nil {
			return nil, err
		}
		if !state.stale && bytes.Equal(data, state.data) {
			return existing, nil // no-op: upstream does not write (a stale value is rewritten)
		}
		if dryRun {
			return s.decode(data, state.rev)
		}
		put, err := s.put(ctx, key, data)
		if err != nil {
			return nil, err
		}
		rev, newState, err := s.writeIfUnchanged(ctx, key, state.rev, put)
		if err != nil {
			return nil, err
		}
		if newState == nil && rev > 0 {
			return s.decode(data, rev)
		}
		s.log.Debug("update lost a race, retrying", "key", key)
		state = newState
	}
}

// Delete removes the object if precondition (may be nil) accepts the
// current state, retrying on a concurrent write. It returns the deleted
// object with resourceVersion set to the delete revision.
func (s *Store) Delete(ctx context.Context, namespace, name string,
	precondition func(existing runtime.Object) error, dryRun bool) (runtime.Object, error) {
	key, err := s.objectKey(namespace, name)
	if err != nil {
		return nil, err
	}
	state, err := s.read(ctx, key)
	if err != nil {
		return nil, err
	}
	for {
		if state == nil {
			return nil, apierrors.NewNotFound(s.resource, name)
		}
		if precondition != nil {
			existing, err := s.decode(state.data, state.rev)
			if err != nil {
				return nil, err
			}
			if err := precondition(existing); err != nil {
				return nil, err
			}
		}
		if dryRun {
			return s.decode(state.data, state.rev)
		}
		rev, newState, err := s.writeIfUnchanged(ctx, key, state.rev, clientv3.OpDelete(key))
		if err != nil {
			return nil, err
		}
		if newState == nil && rev > 0 {
			return s.decode(state.data, rev)
		}
		s.log.Debug("delete lost a race, retrying", "key", key)
		state = newState
	}
}

// put writes data at key, encrypted when the Store has a Transformer and
// with a lease when it has a TTL: every write renews it, as upstream's
// GuaranteedUpdate attaches the TTL's lease on updates too.
func (s *Store) put(ctx context.Context, key string, data []byte) (clientv3.Op, error) {
	data, err := s.toStorage(data, key)
	if err != nil {
		return clientv3.Op{}, err
	}
	if s.ttlSeconds == 0 {
		return clientv3.OpPut(key, string(data)), nil
	}
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	lease, err := s.leases.Get(ctx, s.ttlSeconds)
	if err != nil {
		return clientv3.Op{}, s.etcdError("grant", key, err)
	}
	return clientv3.OpPut(key, string(data), clientv3.WithLease(lease)), nil
}

// CurrentRV returns the revision the cache has reached.
func (s *Store) CurrentRV() int64 { return s.cache.currentRV() }

// Ready is closed once the cache has completed its first list.
func (s *Store) Ready() <-chan struct{} { return s.cache.firstReady }

// kvState is one key's value as read from etcd, decrypted.
type kvState struct {
	data  []byte
	rev   int64 // ModRevision
	stale bool  // not written by the current encryption provider
}

// read returns the key's current state, or nil if absent.
func (s *Store) read(ctx context.Context, key string) (*kvState, error) {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	start := time.Now()
	resp, err := s.client.Get(ctx, key)
	s.ops.get.record(start, err)
	if err != nil {
		return nil, s.etcdError("get", key, err)
	}
	if len(resp.Kvs) == 0 {
		return nil, nil
	}
	return s.state(resp.Kvs[0])
}

// writeIfUnchanged runs op if the key's ModRevision is still rev. On success
// it returns the write revision; otherwise the key's new state (nil, 0 if
// the key is gone: the caller reports NotFound).
func (s *Store) writeIfUnchanged(ctx context.Context, key string, rev int64, op clientv3.Op) (int64, *kvState, error) {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	start := time.Now()
	resp, err := s.client.Txn(ctx).
		If(clientv3.Compare(clientv3.ModRevision(key), "=", rev)).
		Then(op).
		Else(clientv3.OpGet(key)).
		Commit()
	if op.IsDelete() {
		s.ops.delete.record(start, err)
	} else {
		s.ops.update.record(start, err)
	}
	if err != nil {
		return 0, nil, s.etcdError("txn", key, err)
	}
	if resp.Succeeded {
		return resp.Header.Revision, nil, nil
	}
	kvs := resp.Responses[0].GetResponseRange().GetKvs()
	if len(kvs) == 0 {
		return 0, nil, nil
	}
	st, err := s.state(kvs[0])
	return 0, st, err
}

// objectKey is <Prefix>/<resource>/<namespace>/<name>, or without the
// namespace segment for cluster-scoped resources (whose namespace is ignored).
func (s *Store) objectKey(namespace, name string) (string, error) {
	if err := validSegment("name", name); err != nil {
		return "", err
	}
	if !s.namespaced {
		return s.resourcePrefix + name, nil
	}
	if err := validSegment("namespace", namespace); err != nil {
		return "", err
	}
	return s.resourcePrefix + namespace + "/" + name, nil
}

// listPrefix is the key prefix of a list in namespace ("" = all).
func (s *Store) listPrefix(namespace string) (string, error) {
	if !s.namespaced || namespace == "" {
		return s.resourcePrefix, nil
	}
	if err := validSegment("namespace", namespace); err != nil {
		return "", err
	}
	return s.resourcePrefix + namespace + "/", nil
}

// validSegment rejects what cannot be one key path segment (as upstream's
// IsValidPathSegmentName).
func validSegment(what, v string) error {
	switch {
	case v == "":
		return apierrors.NewBadRequest(what + " is required")
	case v == "." || v == ".." || strings.ContainsAny(v, "/%"):
		return apierrors.NewBadRequest(fmt.Sprintf("%s %q may not be '.', '..' or contain '/' or '%%'", what, v))
	}
	return nil
}

// encode is the stored form: JSON without TypeMeta and resourceVersion.
func (s *Store) encode(obj runtime.Object) ([]byte, error) {
	if s.stored != nil {
		obj = s.stored.ToStored(obj)
	}
	obj = obj.DeepCopyObject()
	obj.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	m.SetResourceVersion("")
	data, err := json.Marshal(obj)
	if err != nil {
		return nil, apierrors.NewInternalError(fmt.Errorf("encode %s: %w", s.resource, err))
	}
	return data, nil
}

// state decrypts one etcd value.
func (s *Store) state(kv *mvccpb.KeyValue) (*kvState, error) {
	if s.transformer == nil {
		return &kvState{data: kv.Value, rev: kv.ModRevision}, nil
	}
	data, stale, err := s.transformer.TransformFromStorage(kv.Value, kv.Key)
	if err != nil {
		return nil, apierrors.NewInternalError(fmt.Errorf("decrypt %s %s: %w", s.resource, kv.Key, err))
	}
	return &kvState{data: data, rev: kv.ModRevision, stale: stale}, nil
}

// toStorage encrypts an encoded object for key.
func (s *Store) toStorage(data []byte, key string) ([]byte, error) {
	if s.transformer == nil {
		return data, nil
	}
	out, err := s.transformer.TransformToStorage(data, []byte(key))
	if err != nil {
		return nil, apierrors.NewInternalError(fmt.Errorf("encrypt %s %s: %w", s.resource, key, err))
	}
	return out, nil
}

// decodeKV decrypts and decodes one etcd value.
func (s *Store) decodeKV(kv *mvccpb.KeyValue) (runtime.Object, error) {
	st, err := s.state(kv)
	if err != nil {
		return nil, err
	}
	return s.decode(st.data, st.rev)
}

// decode reads stored bytes into a new object with resourceVersion rev
// (empty when rev is 0).
func (s *Store) decode(data []byte, rev int64) (runtime.Object, error) {
	newFunc := s.newFunc
	if s.stored != nil {
		newFunc = s.stored.New
	}
	obj := newFunc()
	if err := json.Unmarshal(data, obj); err != nil {
		return nil, apierrors.NewInternalError(fmt.Errorf("decode %s: %w", s.resource, err))
	}
	if s.stored != nil {
		obj = s.stored.FromStored(obj)
	}
	setRV(obj, rev)
	return obj, nil
}

func setRV(obj runtime.Object, rev int64) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return // checked in New: NewFunc objects have metadata
	}
	if rev == 0 {
		m.SetResourceVersion("")
		return
	}
	m.SetResourceVersion(strconv.FormatInt(rev, 10))
}

// etcdError turns a failed etcd call into an API error: a timeout (504)
// when the deadline passed, else an internal error (500).
func (s *Store) etcdError(op, key string, err error) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return apierrors.NewTimeoutError(fmt.Sprintf("etcd %s %s: %v", op, key, err), 1)
	}
	if isTooLarge(err) {
		return tooLargeError(err)
	}
	return apierrors.NewInternalError(fmt.Errorf("etcd %s %s: %w", op, key, err))
}
