package storage

import (
	"bytes"
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func TestCreateGet(t *testing.T) {
	s := newStore(t, nil)
	ctx := context.Background()

	in := configMap("default", "one", nil)
	in.Kind, in.APIVersion = "ConfigMap", "v1"
	created := mustCreate(t, s, in)
	if created.ResourceVersion == "" || created.Name != "one" || created.Data["k"] != "v" {
		t.Fatalf("created = %+v", created)
	}

	// Upstream key layout; the value has neither resourceVersion nor TypeMeta.
	raw, err := testClient.Get(ctx, s.resourcePrefix+"default/one")
	if err != nil || len(raw.Kvs) != 1 {
		t.Fatalf("raw get: %v %v", raw, err)
	}
	if v := raw.Kvs[0].Value; bytes.Contains(v, []byte("resourceVersion")) || bytes.Contains(v, []byte(`"kind"`)) {
		t.Errorf("stored value %s", v)
	}
	if got := strconv.FormatInt(raw.Kvs[0].ModRevision, 10); got != created.ResourceVersion {
		t.Errorf("resourceVersion %s, ModRevision %s", created.ResourceVersion, got)
	}

	got, err := s.Get(ctx, "default", "one")
	if err != nil {
		t.Fatal(err)
	}
	if got.(*v1.ConfigMap).ResourceVersion != created.ResourceVersion {
		t.Errorf("get rv %s, create rv %s", got.(*v1.ConfigMap).ResourceVersion, created.ResourceVersion)
	}

	if _, err := s.Create(ctx, configMap("default", "one", nil), false); !apierrors.IsAlreadyExists(err) {
		t.Errorf("second create: %v, want AlreadyExists", err)
	}
	if _, err := s.Create(ctx, configMap("default", "one", nil), true); !apierrors.IsAlreadyExists(err) {
		t.Errorf("dry-run create of existing: %v, want AlreadyExists", err)
	}
	withRV := configMap("default", "two", nil)
	withRV.ResourceVersion = "5"
	if _, err := s.Create(ctx, withRV, false); !apierrors.IsBadRequest(err) {
		t.Errorf("create with resourceVersion: %v, want BadRequest", err)
	}
	if _, err := s.Create(ctx, configMap("default", "a/b", nil), false); !apierrors.IsBadRequest(err) {
		t.Errorf("create with a slash in the name: %v, want BadRequest", err)
	}
	if _, err := s.Create(ctx, configMap("default", "dry", nil), true); err != nil {
		t.Errorf("dry-run create: %v", err)
	}
	if _, err := s.Get(ctx, "default", "dry"); !apierrors.IsNotFound(err) {
		t.Errorf("get after dry-run create: %v, want NotFound", err)
	}
	_, err = s.Get(ctx, "other", "one")
	if !apierrors.IsNotFound(err) {
		t.Fatalf("get in other namespace: %v, want NotFound", err)
	}
	if status := err.(apierrors.APIStatus).Status(); status.Details.Kind != "configmaps" || status.Details.Name != "one" {
		t.Errorf("NotFound details %+v", status.Details)
	}
}

func TestClusterScopedKeys(t *testing.T) {
	prefix := uniquePrefix(t)
	s, err := New(Config{Client: testClient, Prefix: prefix + "/", Resource: v1.Resource("namespaces"),
		NewFunc: func() runtime.Object { return &v1.Namespace{} }})
	if err != nil {
		t.Fatal(err)
	}
	out, err := s.Create(context.Background(), &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns1"}}, false)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := testClient.Get(context.Background(), prefix+"/namespaces/ns1")
	if err != nil || len(raw.Kvs) != 1 {
		t.Fatalf("raw get: %v %v", raw, err)
	}
	if _, err := s.Get(context.Background(), "", "ns1"); err != nil {
		t.Errorf("get: %v", err)
	}
	if rvOf(t, out) != raw.Kvs[0].ModRevision {
		t.Errorf("rv mismatch")
	}
}

// incrementCounter is a tryUpdate that bumps the "counter" label.
func incrementCounter(calls *atomic.Int32) func(runtime.Object) (runtime.Object, error) {
	return func(existing runtime.Object) (runtime.Object, error) {
		calls.Add(1)
		cm := existing.(*v1.ConfigMap)
		n, _ := strconv.Atoi(cm.Labels["counter"])
		if cm.Labels == nil {
			cm.Labels = map[string]string{}
		}
		cm.Labels["counter"] = strconv.Itoa(n + 1)
		return cm, nil
	}
}

func TestUpdateRetriesOnConcurrentWriters(t *testing.T) {
	s := newStore(t, nil)
	ctx := context.Background()
	mustCreate(t, s, configMap("default", "counter", nil))

	var calls atomic.Int32
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			for range 50 {
				if _, err := s.Update(ctx, "default", "counter", incrementCounter(&calls), false); err != nil {
					t.Errorf("update: %v", err)
					return
				}
			}
		})
	}
	wg.Wait()
	got, err := s.Get(ctx, "default", "counter")
	if err != nil {
		t.Fatal(err)
	}
	if c := got.(*v1.ConfigMap).Labels["counter"]; c != "100" {
		t.Errorf("counter = %s, want 100", c)
	}
	t.Logf("tryUpdate called %d times for 100 updates", calls.Load())
}

func TestUpdate(t *testing.T) {
	s := newStore(t, nil)
	ctx := context.Background()
	created := mustCreate(t, s, configMap("default", "cm", nil))

	// No-op: same bytes, no write, same resourceVersion.
	out, err := s.Update(ctx, "default", "cm", func(existing runtime.Object) (runtime.Object, error) {
		return existing, nil
	}, false)
	if err != nil {
		t.Fatal(err)
	}
	if out.(*v1.ConfigMap).ResourceVersion != created.ResourceVersion {
		t.Errorf("no-op update moved rv %s -> %s", created.ResourceVersion, out.(*v1.ConfigMap).ResourceVersion)
	}

	// The caller's precondition is checked by tryUpdate, not retried.
	_, err = s.Update(ctx, "default", "cm", func(existing runtime.Object) (runtime.Object, error) {
		return nil, apierrors.NewConflict(v1.Resource("configmaps"), "cm", nil)
	}, false)
	if !apierrors.IsConflict(err) {
		t.Errorf("update with failing precondition: %v, want Conflict", err)
	}

	// Dry run computes but does not write.
	var calls atomic.Int32
	dry, err := s.Update(ctx, "default", "cm", incrementCounter(&calls), true)
	if err != nil || dry.(*v1.ConfigMap).Labels["counter"] != "1" {
		t.Fatalf("dry-run update: %v %v", dry, err)
	}
	got, _ := s.Get(ctx, "default", "cm")
	if got.(*v1.ConfigMap).ResourceVersion != created.ResourceVersion || got.(*v1.ConfigMap).Labels["counter"] != "" {
		t.Errorf("dry-run update wrote: %+v", got)
	}

	updated, err := s.Update(ctx, "default", "cm", incrementCounter(&calls), false)
	if err != nil {
		t.Fatal(err)
	}
	if rvOf(t, updated) <= rvOf(t, created) {
		t.Errorf("update rv %d not after create rv %d", rvOf(t, updated), rvOf(t, created))
	}

	if _, err := s.Update(ctx, "default", "missing", incrementCounter(&calls), false); !apierrors.IsNotFound(err) {
		t.Errorf("update of missing: %v, want NotFound", err)
	}
}

func TestDelete(t *testing.T) {
	s := newStore(t, nil)
	ctx := context.Background()
	created := mustCreate(t, s, configMap("default", "cm", nil))

	wrongRV := func(existing runtime.Object) error {
		if existing.(*v1.ConfigMap).ResourceVersion != "1" {
			return apierrors.NewConflict(v1.Resource("configmaps"), "cm", nil)
		}
		return nil
	}
	if _, err := s.Delete(ctx, "default", "cm", wrongRV, false); !apierrors.IsConflict(err) {
		t.Fatalf("delete with failing precondition: %v, want Conflict", err)
	}
	if _, err := s.Delete(ctx, "default", "cm", nil, true); err != nil {
		t.Fatalf("dry-run delete: %v", err)
	}
	if _, err := s.Get(ctx, "default", "cm"); err != nil {
		t.Fatalf("object gone after failed/dry-run deletes: %v", err)
	}

	rightRV := func(existing runtime.Object) error {
		if existing.(*v1.ConfigMap).ResourceVersion != created.ResourceVersion {
			return apierrors.NewConflict(v1.Resource("configmaps"), "cm", nil)
		}
		return nil
	}
	deleted, err := s.Delete(ctx, "default", "cm", rightRV, false)
	if err != nil {
		t.Fatal(err)
	}
	if deleted.(*v1.ConfigMap).Name != "cm" || rvOf(t, deleted) <= rvOf(t, created) {
		t.Errorf("deleted = %+v, want the object at the delete revision", deleted)
	}
	if _, err := s.Get(ctx, "default", "cm"); !apierrors.IsNotFound(err) {
		t.Errorf("get after delete: %v, want NotFound", err)
	}
	if _, err := s.Delete(ctx, "default", "cm", nil, false); !apierrors.IsNotFound(err) {
		t.Errorf("second delete: %v, want NotFound", err)
	}
}

func TestDeleteRetriesOnConcurrentUpdate(t *testing.T) {
	s := newStore(t, nil)
	ctx := context.Background()
	mustCreate(t, s, configMap("default", "cm", nil))

	var calls atomic.Int32
	var sawUpdated bool
	deleted, err := s.Delete(ctx, "default", "cm", func(existing runtime.Object) error {
		if calls.Add(1) == 1 { // a writer sneaks in between our read and our delete
			if _, err := s.Update(ctx, "default", "cm", incrementCounter(new(atomic.Int32)), false); err != nil {
				t.Errorf("update: %v", err)
			}
		} else {
			sawUpdated = existing.(*v1.ConfigMap).Labels["counter"] == "1"
		}
		return nil
	}, false)
	if err != nil {
		t.Fatal(err)
	}
	if calls.Load() != 2 || !sawUpdated || deleted.(*v1.ConfigMap).Labels["counter"] != "1" {
		t.Errorf("precondition calls %d, saw update %v, deleted %+v", calls.Load(), sawUpdated, deleted)
	}
}
