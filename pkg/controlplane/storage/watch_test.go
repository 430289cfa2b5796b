package storage

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

func setData(v string) func(runtime.Object) (runtime.Object, error) {
	return func(o runtime.Object) (runtime.Object, error) {
		o.(*v1.ConfigMap).Data = map[string]string{"k": v}
		return o, nil
	}
}

func setLabels(labels map[string]string) func(runtime.Object) (runtime.Object, error) {
	return func(o runtime.Object) (runtime.Object, error) {
		o.(*v1.ConfigMap).Labels = labels
		return o, nil
	}
}

func mustUpdate(t *testing.T, s *Store, ns, name string, f func(runtime.Object) (runtime.Object, error)) *v1.ConfigMap {
	t.Helper()
	out, err := s.Update(context.Background(), ns, name, f, false)
	if err != nil {
		t.Fatalf("update: %v", err)
	}
	return out.(*v1.ConfigMap)
}

func mustWatch(t *testing.T, s *Store, ns string, opts WatchOptions) watch.Interface {
	t.Helper()
	w, err := s.Watch(context.Background(), ns, opts)
	if err != nil {
		t.Fatalf("watch: %v", err)
	}
	t.Cleanup(w.Stop)
	return w
}

func TestWatchFromResourceVersion(t *testing.T) {
	s := newStore(t, nil)
	ctx := context.Background()
	start := mustCreate(t, s, configMap("default", "cm", nil))
	mustCreate(t, s, configMap("other", "cm", nil)) // not in the watched namespace
	u1 := mustUpdate(t, s, "default", "cm", setData("1"))
	u2 := mustUpdate(t, s, "default", "cm", setData("2"))
	del, err := s.Delete(ctx, "default", "cm", nil, false)
	if err != nil {
		t.Fatal(err)
	}

	w := mustWatch(t, s, "default", WatchOptions{ResourceVersion: start.ResourceVersion})
	for _, want := range []struct {
		typ watch.EventType
		rv  string
		k   string
	}{
		{watch.Modified, u1.ResourceVersion, "1"},
		{watch.Modified, u2.ResourceVersion, "2"},
		{watch.Deleted, del.(*v1.ConfigMap).ResourceVersion, "2"},
	} {
		got := expectEvent(t, w, want.typ, "cm")
		if got.ResourceVersion != want.rv || got.Data["k"] != want.k {
			t.Errorf("%s event at rv %s data %v, want rv %s data %s", want.typ, got.ResourceVersion, got.Data, want.rv, want.k)
		}
	}
	live := mustCreate(t, s, configMap("default", "live", nil))
	ev := expectEvent(t, w, watch.Added, "live")
	if ev.ResourceVersion != live.ResourceVersion {
		t.Errorf("live event rv %s, want %s", ev.ResourceVersion, live.ResourceVersion)
	}
	// Events are copies: changing one does not change the cache.
	ev.Labels = map[string]string{"mutated": "true"}
	got, _ := s.List(ctx, "default", ListOptions{ResourceVersion: "0"})
	if len(got.Items) != 1 || got.Items[0].(*v1.ConfigMap).Labels != nil {
		t.Errorf("cache content %v", names(got.Items))
	}
}

func TestWatchInitialEventsAndStop(t *testing.T) {
	s := newStore(t, nil)
	for i := range 3 {
		mustCreate(t, s, configMap("default", fmt.Sprint("cm", i), nil))
	}
	for _, rv := range []string{"", "0"} {
		w := mustWatch(t, s, "default", WatchOptions{ResourceVersion: rv})
		for i := range 3 {
			expectEvent(t, w, watch.Added, fmt.Sprint("cm", i))
		}
		w.Stop()
		waitClosed(t, w)
	}
	if n := s.cache.watcherCount(); n != 0 {
		t.Errorf("%d watchers left after Stop", n)
	}

	// Ending the watch's context ends the watch too.
	ctx, cancel := context.WithCancel(context.Background())
	w, err := s.Watch(ctx, "", WatchOptions{ResourceVersion: "0"})
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	waitClosed(t, w)
	if n := s.cache.watcherCount(); n != 0 {
		t.Errorf("%d watchers left after the context ended", n)
	}
}

func TestWatchTooOldResourceVersion(t *testing.T) {
	s := newStore(t, func(c *Config) { c.CacheEvents = 5 })
	first := mustCreate(t, s, configMap("default", "cm", nil))
	var last *v1.ConfigMap
	for i := range 10 {
		last = mustUpdate(t, s, "default", "cm", setData(fmt.Sprint(i)))
	}
	waitCache(t, s, rvOf(t, last))

	_, err := s.Watch(context.Background(), "", WatchOptions{ResourceVersion: first.ResourceVersion})
	if !apierrors.IsResourceExpired(err) || !strings.Contains(err.Error(), "too old resource version: "+first.ResourceVersion+" (") {
		t.Fatalf("watch from %s: %v, want 410 too old", first.ResourceVersion, err)
	}
	// The ring still reaches back to the last 5 events.
	w := mustWatch(t, s, "", WatchOptions{ResourceVersion: fmt.Sprint(rvOf(t, last) - 4)})
	for range 4 {
		expectEvent(t, w, watch.Modified, "cm")
	}
}

func TestWatchFilterTransitions(t *testing.T) {
	s := newStore(t, nil)
	selected := func(o runtime.Object) bool { return o.(*v1.ConfigMap).Labels["app"] == "x" }
	w := mustWatch(t, s, "", WatchOptions{ResourceVersion: "0", Filter: selected})

	mustCreate(t, s, configMap("default", "cm", nil)) // neither: nothing
	mustUpdate(t, s, "default", "cm", setLabels(map[string]string{"app": "x"}))
	expectEvent(t, w, watch.Added, "cm")
	mustUpdate(t, s, "default", "cm", setData("2"))
	if got := expectEvent(t, w, watch.Modified, "cm"); got.Data["k"] != "2" {
		t.Errorf("modified data %v", got.Data)
	}
	left := mustUpdate(t, s, "default", "cm", setLabels(map[string]string{"app": "y"}))
	got := expectEvent(t, w, watch.Deleted, "cm")
	// Upstream: the last state the watcher could see, at the event's revision.
	if got.ResourceVersion != left.ResourceVersion || got.Labels["app"] != "x" {
		t.Errorf("filtered-out DELETED: rv %s labels %v, want rv %s and the old labels", got.ResourceVersion, got.Labels, left.ResourceVersion)
	}
	if _, err := s.Delete(context.Background(), "default", "cm", nil, false); err != nil { // neither: nothing
		t.Fatal(err)
	}
	mustCreate(t, s, configMap("default", "sentinel", map[string]string{"app": "x"}))
	expectEvent(t, w, watch.Added, "sentinel")
}

func TestWatchBookmarks(t *testing.T) {
	s := newStore(t, func(c *Config) { c.BookmarkPeriod = 20 * time.Millisecond })
	created := mustCreate(t, s, configMap("default", "cm", nil))
	waitCache(t, s, rvOf(t, created))
	withBookmarks := mustWatch(t, s, "", WatchOptions{ResourceVersion: created.ResourceVersion, AllowBookmarks: true})
	without := mustWatch(t, s, "", WatchOptions{ResourceVersion: created.ResourceVersion})

	// A write elsewhere in etcd: etcd's progress notifications move the
	// cache past the watch's start, so bookmarks have something to say.
	other, err := testClient.Put(context.Background(), "/unrelated/key", "x")
	if err != nil {
		t.Fatal(err)
	}
	ev := next(t, withBookmarks)
	bm, ok := ev.Object.(*v1.ConfigMap)
	if ev.Type != watch.Bookmark || !ok || rvOf(t, bm) < other.Header.Revision || bm.Name != "" {
		t.Fatalf("got %s %+v, want a bookmark at or after %d", ev.Type, ev.Object, other.Header.Revision)
	}
	// Only now write: the first thing the other watcher sees is this event.
	mustCreate(t, s, configMap("default", "after", nil))
	expectEvent(t, without, watch.Added, "after")
}

func TestWatchSendInitialEvents(t *testing.T) {
	s := newStore(t, nil)
	var last *v1.ConfigMap
	for i := range 3 {
		last = mustCreate(t, s, configMap("default", fmt.Sprint("cm", i), nil))
	}
	yes := true
	w := mustWatch(t, s, "", WatchOptions{SendInitialEvents: &yes, AllowBookmarks: true})
	for i := range 3 {
		expectEvent(t, w, watch.Added, fmt.Sprint("cm", i))
	}
	ev := next(t, w)
	bm, ok := ev.Object.(*v1.ConfigMap)
	if ev.Type != watch.Bookmark || !ok || bm.Annotations[metav1.InitialEventsAnnotationKey] != "true" ||
		rvOf(t, bm) < rvOf(t, last) {
		t.Fatalf("got %s %+v, want the initial-events-end bookmark", ev.Type, ev.Object)
	}
	mustCreate(t, s, configMap("default", "live", nil))
	expectEvent(t, w, watch.Added, "live")

	// SendInitialEvents=false: live events only.
	no := false
	w = mustWatch(t, s, "", WatchOptions{ResourceVersion: "0", SendInitialEvents: &no})
	mustCreate(t, s, configMap("default", "live2", nil))
	expectEvent(t, w, watch.Added, "live2")
}

func TestSlowWatcherIsClosed(t *testing.T) {
	s := newStore(t, nil)
	s.watchBuffer = 5
	slow := mustWatch(t, s, "", WatchOptions{ResourceVersion: "0"}) // never read until the end
	fast := mustWatch(t, s, "", WatchOptions{ResourceVersion: "0"})

	const n = 20
	for i := range n {
		mustCreate(t, s, configMap("default", fmt.Sprint("cm", i), nil))
		expectEvent(t, fast, watch.Added, fmt.Sprint("cm", i))
	}
	if got := waitClosed(t, slow); got >= n {
		t.Errorf("slow watcher got all %d events; want it closed early", got)
	}
	if c := s.cache.watcherCount(); c != 1 {
		t.Errorf("%d watchers registered, want only the fast one", c)
	}
}

func TestWatchFanOutUsesOneEtcdWatch(t *testing.T) {
	s := newStore(t, nil)
	watchers := make([]watch.Interface, 100)
	for i := range watchers {
		watchers[i] = mustWatch(t, s, "default", WatchOptions{ResourceVersion: "0"})
	}
	mustCreate(t, s, configMap("default", "cm", nil))
	for _, w := range watchers {
		expectEvent(t, w, watch.Added, "cm")
	}
	if n := s.etcdWatches.Load(); n != 1 {
		t.Errorf("%d etcd watches for 100 watchers, want 1", n)
	}
}

func TestRunEndClosesWatchers(t *testing.T) {
	s, err := New(Config{Client: testClient, Prefix: uniquePrefix(t), Resource: v1.Resource("configmaps"),
		Namespaced: true, NewFunc: func() runtime.Object { return &v1.ConfigMap{} }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	<-s.Ready()
	w := mustWatch(t, s, "", WatchOptions{ResourceVersion: "0"})
	cancel()
	waitClosed(t, w)
	if err := <-done; err != nil {
		t.Errorf("Run: %v", err)
	}
	if n := s.etcdWatches.Load(); n != 0 {
		t.Errorf("%d etcd watches after Run returned", n)
	}
}
