package objectmanager

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"
)

func newWatching(t *testing.T, f *fakeAPI, c *clocktesting.FakeClock) *Manager {
	t.Helper()
	cfg := Config{Client: f.cs, ResyncPeriod: time.Minute}
	if c != nil {
		cfg.Clock = c
	}
	m, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	runManager(t, m)
	return m
}

func getValue(t *testing.T, m *Manager, name string) string {
	t.Helper()
	cm, err := m.GetConfigMap(context.Background(), "ns", name)
	if err != nil {
		t.Fatalf("get %s: %v", name, err)
	}
	return cm.Data["k"]
}

// TestWatchSharedAndReferenceCounted: pods referring to one config map
// share one list/watch of that single object; a change reaches reads
// through the watch, with no GET; the watch stops when the last pod
// that refers to it is unregistered, and reads then fail.
func TestWatchSharedAndReferenceCounted(t *testing.T) {
	f := newFakeAPI(configMap("a", "v1"))
	m := newWatching(t, f, nil)
	p1, p2 := podWith("1", []string{"a"}, nil, nil), podWith("2", nil, []string{"a"}, nil)
	m.RegisterPod(p1)
	m.RegisterPod(p2)
	m.RegisterPod(p1) // every sync registers again: no new watch
	if got := getValue(t, m, "a"); got != "v1" {
		t.Fatalf("a = %q, want v1", got)
	}
	w := f.nextWatch(t)
	f.noWatch(t)
	if sel := f.listSelectors("configmaps"); !slices.Equal(sel, []string{"metadata.name=a"}) {
		t.Errorf("lists: %q, want one with metadata.name=a", sel)
	}
	w.Modify(configMap("a", "v2"))
	waitFor(t, "the change to reach the reads", func() bool { return getValue(t, m, "a") == "v2" })
	if gets := f.calls("get", "configmaps"); len(gets) != 0 {
		t.Errorf("%d GETs, want none", len(gets))
	}

	m.UnregisterPod(p1)
	if got := getValue(t, m, "a"); got != "v2" || w.IsStopped() {
		t.Fatalf("after one of two pods left: a = %q, watch stopped %v", got, w.IsStopped())
	}
	m.UnregisterPod(p2)
	m.UnregisterPod(p2) // idempotent
	waitStopped(t, w)
	_, err := m.GetConfigMap(context.Background(), "ns", "a")
	if err == nil || err.Error() != `object "ns"/"a" not registered` {
		t.Errorf("read after the last pod left: %v", err)
	}
}

// TestWatchNotFound: a config map that does not exist is a NotFound with
// upstream's singular resource name, so optional references still work;
// once created, the watch brings it.
func TestWatchNotFound(t *testing.T) {
	f := newFakeAPI()
	m := newWatching(t, f, nil)
	m.RegisterPod(podWith("1", []string{"missing"}, nil, nil))
	_, err := m.GetConfigMap(context.Background(), "ns", "missing")
	if !apierrors.IsNotFound(err) || err.Error() != `configmap "missing" not found` {
		t.Fatalf("missing: %v", err)
	}
	f.nextWatch(t).Add(configMap("missing", "here"))
	waitFor(t, "the created config map", func() bool {
		cm, err := m.GetConfigMap(context.Background(), "ns", "missing")
		return err == nil && cm.Data["k"] == "here"
	})
}

// TestWatchSyncTimeout: while the list fails, a read waits a bounded time
// and fails with upstream's message.
func TestWatchSyncTimeout(t *testing.T) {
	f := newFakeAPI(configMap("a", "v1"))
	f.cs.PrependReactor("list", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("API server away")
	})
	m := newWatching(t, f, nil)
	m.watches[0].syncTimeout = 20 * time.Millisecond
	m.RegisterPod(podWith("1", []string{"a"}, nil, nil))
	_, err := m.GetConfigMap(context.Background(), "ns", "a")
	if err == nil || err.Error() != "failed to sync configmap cache: timed out waiting for the condition" {
		t.Fatalf("read while the list fails: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	m.watches[0].syncTimeout = time.Hour
	if _, err := m.GetConfigMap(ctx, "ns", "a"); err == nil || err.Error() != "failed to sync configmap cache: context canceled" {
		t.Errorf("read with a canceled context: %v", err)
	}
}

// TestWatchImmutable: once an immutable object is read its watch stops,
// for good: reads keep the object without a new list.
func TestWatchImmutable(t *testing.T) {
	yes := true
	cm := configMap("frozen", "v1")
	cm.Immutable = &yes
	f := newFakeAPI(cm)
	m := newWatching(t, f, nil)
	m.RegisterPod(podWith("1", []string{"frozen"}, nil, nil))
	if got := getValue(t, m, "frozen"); got != "v1" {
		t.Fatalf("frozen = %q", got)
	}
	// The read may stop the reflector before it opened its watch.
	waitFor(t, "the reflector to stop", func() bool { return runEnded(m.watches[0], "frozen") })
	for range 3 {
		if got := getValue(t, m, "frozen"); got != "v1" {
			t.Fatalf("frozen after its watch stopped = %q", got)
		}
	}
	select {
	case w := <-f.watches:
		if !w.IsStopped() {
			t.Error("the watch of an immutable object is open")
		}
	default:
	}
	f.noWatch(t)
	if n := len(f.listSelectors("configmaps")); n != 1 {
		t.Errorf("%d lists, want 1", n)
	}
}

// runEnded tells whether the object's reflector run has returned.
func runEnded(s *watchStore, name string) bool {
	s.mu.Lock()
	it := s.items[objectKey{"ns", name}]
	s.mu.Unlock()
	it.mu.Lock()
	defer it.mu.Unlock()
	return !it.running && closed(it.done)
}

// TestWatchIdleStopsAndRestarts: a watch not read for five sync periods
// is stopped (not one still listing), and the next read starts it again.
func TestWatchIdleStopsAndRestarts(t *testing.T) {
	clock := clocktesting.NewFakeClock(time.Now())
	f := newFakeAPI(configMap("env-only", "v1"))
	m := newWatching(t, f, clock)
	w := m.watches[0]
	m.RegisterPod(podWith("1", nil, []string{"env-only"}, nil))
	if got := getValue(t, m, "env-only"); got != "v1" {
		t.Fatalf("env-only = %q", got)
	}
	first := f.nextWatch(t)
	clock.Step(4 * time.Minute)
	w.recycleIdle()
	if first.IsStopped() {
		t.Fatal("stopped before five sync periods")
	}
	clock.Step(2 * time.Minute)
	w.recycleIdle()
	waitStopped(t, first)

	if got := getValue(t, m, "env-only"); got != "v1" {
		t.Fatalf("env-only after the restart = %q", got)
	}
	second := f.nextWatch(t)
	if n := len(f.listSelectors("configmaps")); n != 2 {
		t.Errorf("%d lists, want 2 (the restart lists again)", n)
	}
	second.Modify(configMap("env-only", "v2"))
	waitFor(t, "the restarted watch's change", func() bool { return getValue(t, m, "env-only") == "v2" })
}

// TestWatchIdleKeepsListing: a watch whose list has not succeeded is not
// stopped for being idle.
func TestWatchIdleKeepsListing(t *testing.T) {
	clock := clocktesting.NewFakeClock(time.Now())
	f := newFakeAPI()
	f.cs.PrependReactor("list", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("API server away")
	})
	m := newWatching(t, f, clock)
	w := m.watches[0]
	m.RegisterPod(podWith("1", []string{"a"}, nil, nil))
	waitFor(t, "a list", func() bool { return len(f.listSelectors("configmaps")) > 0 })
	clock.Step(time.Hour)
	w.recycleIdle()
	it := w.items[objectKey{"ns", "a"}]
	it.mu.Lock()
	running := it.running
	it.mu.Unlock()
	if !running {
		t.Error("a watch still listing was stopped")
	}
}

// TestWatchPodUpdate: a pod whose spec now names another object moves its
// reference: the old watch stops, the new one starts.
func TestWatchPodUpdate(t *testing.T) {
	f := newFakeAPI(configMap("old", "o"), configMap("new", "n"))
	m := newWatching(t, f, nil)
	p := podWith("1", []string{"old"}, nil, nil)
	m.RegisterPod(p)
	getValue(t, m, "old")
	old := f.nextWatch(t)
	m.RegisterPod(podWith("1", []string{"new"}, nil, nil))
	waitStopped(t, old)
	if got := getValue(t, m, "new"); got != "n" {
		t.Fatalf("new = %q", got)
	}
	if _, err := m.GetConfigMap(context.Background(), "ns", "old"); err == nil {
		t.Error("the dropped reference still reads")
	}
}

// TestWatchSecrets: image pull secrets are watched the same way.
func TestWatchSecrets(t *testing.T) {
	s := &v1.Secret{}
	s.Namespace, s.Name, s.Data = "ns", "pull", map[string][]byte{"k": []byte("x")}
	f := newFakeAPI(s)
	m := newWatching(t, f, nil)
	m.RegisterPod(podWith("1", nil, nil, []string{"pull"}))
	got, err := m.GetSecret(context.Background(), "ns", "pull")
	if err != nil || string(got.Data["k"]) != "x" {
		t.Fatalf("pull secret: %v %v", got, err)
	}
	if sel := f.listSelectors("secrets"); !slices.Equal(sel, []string{"metadata.name=pull"}) {
		t.Errorf("secret lists: %q", sel)
	}
	if sel := f.listSelectors("configmaps"); len(sel) != 0 {
		t.Errorf("config map lists for a pod with none: %q", sel)
	}
}

// TestWatchShutdown: once Run's context ends every watch stops and none
// starts again.
func TestWatchShutdown(t *testing.T) {
	f := newFakeAPI(configMap("a", "v1"))
	m, err := New(Config{Client: f.cs})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- m.Run(ctx) }()
	m.RegisterPod(podWith("1", []string{"a"}, nil, nil))
	getValue(t, m, "a")
	w := f.nextWatch(t)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !w.IsStopped() {
		t.Error("Run returned with a watch open")
	}
	m.watches[0].syncTimeout = 10 * time.Millisecond
	m.RegisterPod(podWith("2", []string{"b"}, nil, nil))
	if _, err := m.GetConfigMap(context.Background(), "ns", "b"); err == nil {
		t.Error("a read after shutdown started a watch")
	}
	f.noWatch(t)
}
