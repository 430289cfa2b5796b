package storage

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// secretView serves the ConfigMaps of a store as Secrets: a stand-in for
// a second API version of one stored resource.
var secretView = &Conversion{
	New: func() runtime.Object { return &v1.ConfigMap{} },
	ToStored: func(o runtime.Object) runtime.Object {
		s := o.(*v1.Secret)
		cm := &v1.ConfigMap{ObjectMeta: *s.ObjectMeta.DeepCopy(), Data: map[string]string{}}
		for k, v := range s.Data {
			cm.Data[k] = string(v)
		}
		return cm
	},
	FromStored: func(o runtime.Object) runtime.Object {
		cm := o.(*v1.ConfigMap)
		s := &v1.Secret{ObjectMeta: *cm.ObjectMeta.DeepCopy(), Data: map[string][]byte{}}
		for k, v := range cm.Data {
			s.Data[k] = []byte(v)
		}
		return s
	},
}

// TestStoredAsAnotherShape: two stores on one resource's keys, one of them
// converting, see each other's writes in their own shape, in reads and
// in their watches.
func TestStoredAsAnotherShape(t *testing.T) {
	prefix := uniquePrefix(t)
	plain := newStore(t, func(c *Config) { c.Prefix = prefix })
	view := newStore(t, func(c *Config) {
		c.Prefix = prefix
		c.NewFunc = func() runtime.Object { return &v1.Secret{} }
		c.Stored = secretView
	})
	ctx := context.Background()
	w, err := view.Watch(ctx, "default", WatchOptions{ResourceVersion: "0"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	mustCreate(t, plain, configMap("default", "from-plain", nil))
	if ev := next(t, w); ev.Type != watch.Added || string(ev.Object.(*v1.Secret).Data["k"]) != "v" {
		t.Fatalf("view's watch: %s %#v, want ADDED of the Secret form", ev.Type, ev.Object)
	}
	got, err := view.Get(ctx, "default", "from-plain")
	if err != nil || string(got.(*v1.Secret).Data["k"]) != "v" {
		t.Fatalf("view's get: %#v, %v", got, err)
	}

	in := &v1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "from-view"}, Data: map[string][]byte{"x": []byte("y")}}
	created, err := view.Create(ctx, in, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := created.(*v1.Secret); !ok {
		t.Fatalf("view's create returned %T", created)
	}
	stored, err := plain.Get(ctx, "default", "from-view")
	if err != nil || stored.(*v1.ConfigMap).Data["x"] != "y" {
		t.Fatalf("plain get of the view's write: %#v, %v", stored, err)
	}
	updated, err := view.Update(ctx, "default", "from-view", func(o runtime.Object) (runtime.Object, error) {
		o.(*v1.Secret).Data["x"] = []byte("z")
		return o, nil
	}, false)
	if err != nil || string(updated.(*v1.Secret).Data["x"]) != "z" {
		t.Fatalf("view's update: %#v, %v", updated, err)
	}
	waitCache(t, plain, rvOf(t, updated))
	list, err := plain.List(ctx, "default", ListOptions{ResourceVersion: "0"})
	if err != nil || len(list.Items) != 2 {
		t.Fatalf("plain list: %v, %v", list, err)
	}
}
