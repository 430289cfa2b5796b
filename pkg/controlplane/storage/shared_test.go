package storage

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
)

// Shared watchers of one event get the cache's object once: one encoding
// for all of them, the DELETED event's at the deletion's revision, and a
// copy (not the cache's object) from DeepCopyObject; the kind cannot be
// set on the shared object.
func TestSharedWatchersEncodeOnce(t *testing.T) {
	s := newStore(t, nil)
	cm := mustCreate(t, s, configMap("default", "cm", nil))
	w1 := mustWatch(t, s, "default", WatchOptions{ResourceVersion: cm.ResourceVersion, Shared: true})
	w2 := mustWatch(t, s, "default", WatchOptions{ResourceVersion: cm.ResourceVersion, Shared: true})
	updated := mustUpdate(t, s, "default", "cm", setData("1"))
	deleted, err := s.Delete(context.Background(), "default", "cm", nil, false)
	if err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int32
	encode := func(obj runtime.Object) ([]byte, error) {
		calls.Add(1)
		return json.Marshal(obj)
	}
	for _, want := range []struct {
		typ watch.EventType
		rv  string
	}{{watch.Modified, updated.ResourceVersion}, {watch.Deleted, deleted.(*v1.ConfigMap).ResourceVersion}} {
		calls.Store(0)
		var encodings []string
		for _, w := range []watch.Interface{w1, w2} {
			ev := next(t, w)
			so, ok := ev.Object.(*SharedObject)
			if ev.Type != want.typ || !ok {
				t.Fatalf("event %s %T, want %s *SharedObject", ev.Type, ev.Object, want.typ)
			}
			so.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{Kind: "Changed"})
			data, err := so.Encode(encode)
			if err != nil {
				t.Fatal(err)
			}
			encodings = append(encodings, string(data))
			var got v1.ConfigMap
			if err := json.Unmarshal(data, &got); err != nil || got.ResourceVersion != want.rv || got.Data["k"] != "1" || got.Kind != "" {
				t.Errorf("%s encoding %s (%v), want rv %s, data k=1, no kind set", want.typ, data, err, want.rv)
			}
			c := so.DeepCopyObject().(*v1.ConfigMap)
			c.Labels = map[string]string{"mutated": "true"}
			if c.ResourceVersion != want.rv {
				t.Errorf("%s copy at rv %s, want %s", want.typ, c.ResourceVersion, want.rv)
			}
		}
		if calls.Load() != 1 || encodings[0] != encodings[1] {
			t.Errorf("%s: %d encodings for two watchers (%q), want one shared", want.typ, calls.Load(), encodings)
		}
	}
	// Unshared watchers still get copies of their own.
	w3 := mustWatch(t, s, "default", WatchOptions{ResourceVersion: cm.ResourceVersion})
	if ev := next(t, w3); ev.Type != watch.Modified {
		t.Fatalf("unshared watcher: %s", ev.Type)
	} else if _, ok := ev.Object.(*v1.ConfigMap); !ok {
		t.Errorf("unshared watcher got %T, want *v1.ConfigMap", ev.Object)
	}
}
