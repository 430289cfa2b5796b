package storage

import (
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// SharedObject is a watch event's object as the watch cache holds it,
// shared by every watcher of the event (WatchOptions.Shared): one
// encoding serves them all, as upstream's cachingObject, rather than a
// copy and an encoding per watcher. It is read-only: GetObjectKind gives
// a kind that cannot be set, and DeepCopyObject a private copy.
type SharedObject struct {
	obj runtime.Object // the cache's, never modified
	// rv, when non-zero, is the resourceVersion the encoding carries (a
	// DELETED event's previous state, at the deletion's revision).
	rv  int64
	enc *encoding
}

// encoding memoizes one encoding of an event's object.
type encoding struct {
	once sync.Once
	data []byte
	err  error
}

func newEncoding() *encoding { return &encoding{} }

// GetObjectKind implements runtime.Object without letting the shared
// object change.
func (s *SharedObject) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

// DeepCopyObject implements runtime.Object: the event's object, a copy the
// caller owns (with the DELETED event's resourceVersion).
func (s *SharedObject) DeepCopyObject() runtime.Object {
	obj := s.obj.DeepCopyObject()
	if s.rv != 0 {
		setRV(obj, s.rv)
	}
	return obj
}

// Encode returns encode's result for the event's object, computed once for
// every watcher of the event: encode gets a copy it may change (set the
// kind, for example), and every caller must pass an equivalent encode (the
// watchers of one store serve one resource).
func (s *SharedObject) Encode(encode func(runtime.Object) ([]byte, error)) ([]byte, error) {
	if s.enc == nil {
		return encode(s.DeepCopyObject())
	}
	s.enc.once.Do(func() { s.enc.data, s.enc.err = encode(s.DeepCopyObject()) })
	return s.enc.data, s.enc.err
}
