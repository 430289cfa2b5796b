package imagegc

import (
	"context"
	"errors"
	"log/slog"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/record"
	criv1 "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodeagent/nodeagent/pkg/stats"
)

// fakeCRI is a stateful image store and container list.
type fakeCRI struct {
	images     map[string]*criv1.Image
	containers []*criv1.Container
	removeErr  error
	failing    map[string]bool // these removals fail
	removed    []string
}

func (f *fakeCRI) add(id string, size uint64, tags ...string) {
	f.images[id] = &criv1.Image{Id: id, Size: size, RepoTags: tags}
}

func (f *fakeCRI) ListImages(context.Context, *criv1.ImageFilter) ([]*criv1.Image, error) {
	var out []*criv1.Image
	for _, im := range f.images {
		out = append(out, im)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Id < out[j].Id })
	return out, nil
}

func (f *fakeCRI) RemoveImage(_ context.Context, spec *criv1.ImageSpec) error {
	if f.removeErr != nil {
		return f.removeErr
	}
	if f.failing[spec.GetImage()] {
		return errors.New("remove " + spec.GetImage() + ": read-only")
	}
	delete(f.images, spec.GetImage())
	f.removed = append(f.removed, spec.GetImage())
	return nil
}

func (f *fakeCRI) ListContainers(context.Context, *criv1.ContainerFilter) ([]*criv1.Container, error) {
	return f.containers, nil
}

type fakeFs struct{ capacity, available uint64 }

func (f *fakeFs) ImageFsStats(context.Context) (*stats.FsStats, error) {
	return &stats.FsStats{CapacityBytes: &f.capacity, AvailableBytes: &f.available}, nil
}

type counts map[string]int

func (c counts) ImageGarbageCollected(reason string) { c[reason]++ }

type clock struct{ now time.Time }

func (c *clock) Now() time.Time { return c.now }

func newTestManager(t *testing.T, p Policy) (*Manager, *fakeCRI, *fakeFs, *record.FakeRecorder, counts, *clock) {
	t.Helper()
	cri := &fakeCRI{images: map[string]*criv1.Image{}}
	fs := &fakeFs{capacity: 1000, available: 1000}
	rec, c, clk := record.NewFakeRecorder(10), counts{}, &clock{now: t0}
	m, err := New(Config{Policy: p, Images: cri, Containers: cri, FsStats: fs, SandboxImage: "localhost/pause:1",
		Recorder: rec, Metrics: c, NodeName: "n1", Now: clk.Now, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	return m, cri, fs, rec, c, clk
}

func TestGarbageCollectSpace(t *testing.T) {
	m, cri, fs, rec, c, clk := newTestManager(t, policy)
	cri.add("sha256:pause", 100, "localhost/pause:1")
	cri.add("sha256:used", 100, "docker.io/library/used:1")
	cri.add("sha256:old", 100, "docker.io/library/old:1")
	cri.containers = []*criv1.Container{{Image: &criv1.ImageSpec{Image: "docker.io/library/used:1"}, ImageRef: "sha256:used"}}
	if err := m.GarbageCollect(context.Background()); err != nil {
		t.Fatal(err)
	}
	cri.add("sha256:new", 100) // first seen later: younger than the minimum age
	clk.now = t0.Add(3 * time.Minute)
	fs.available = 100 // 90% used: 100 bytes to free down to 80%
	if err := m.GarbageCollect(context.Background()); err != nil {
		t.Fatalf("GarbageCollect: %v", err)
	}
	if want := []string{"sha256:old"}; !reflect.DeepEqual(cri.removed, want) {
		t.Errorf("removed %v, want %v", cri.removed, want)
	}
	if c[ReasonSpace] != 1 || c[ReasonAge] != 0 {
		t.Errorf("counted %v", c)
	}

	// Nothing else is eligible: the kubelet's FreeDiskSpaceFailed.
	err := m.GarbageCollect(context.Background())
	want := "Warning FreeDiskSpaceFailed Insufficient free disk space on the node's image filesystem (90% of 1000 B used). " +
		"Failed to free sufficient space by deleting unused images (freed 0 bytes)."
	if err == nil || !strings.HasPrefix(err.Error(), "Insufficient free disk space") {
		t.Fatalf("GarbageCollect = %v, want a shortfall", err)
	}
	select {
	case e := <-rec.Events:
		if !strings.HasPrefix(e, want) {
			t.Errorf("event %q, want prefix %q", e, want)
		}
	default:
		t.Error("no event")
	}
}

func TestGarbageCollectMaxAge(t *testing.T) {
	p := policy
	p.MaxAge = 10 * time.Minute
	m, cri, _, _, c, clk := newTestManager(t, p)
	cri.add("sha256:pause", 100, "localhost/pause:1")
	cri.add("sha256:pinned", 100)
	cri.images["sha256:pinned"].Pinned = true
	cri.add("sha256:used", 100)
	cri.add("sha256:idle", 100)
	cri.containers = []*criv1.Container{{ImageRef: "sha256:used"}}
	clk.now = t0.Add(10 * time.Minute) // not longer than the maximum age since start
	if err := m.GarbageCollect(context.Background()); err != nil || len(cri.removed) != 0 {
		t.Fatalf("GarbageCollect = %v, removed %v: want nothing yet", err, cri.removed)
	}
	clk.now = t0.Add(11 * time.Minute)
	if err := m.GarbageCollect(context.Background()); err != nil {
		t.Fatal(err)
	}
	if want := []string{"sha256:idle"}; !reflect.DeepEqual(cri.removed, want) || c[ReasonAge] != 1 {
		t.Errorf("removed %v (counted %v), want %v by age", cri.removed, c, want)
	}
}

func TestDeleteUnusedImages(t *testing.T) {
	m, cri, _, _, _, clk := newTestManager(t, policy)
	cri.add("sha256:a", 10)
	cri.add("sha256:b", 20)
	cri.add("sha256:pause", 5, "localhost/pause:1")
	if _, err := m.DeleteUnusedImages(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(cri.removed) != 0 {
		t.Fatalf("removed %v before the minimum age", cri.removed)
	}
	clk.now = t0.Add(time.Hour)
	freed, err := m.DeleteUnusedImages(context.Background())
	if err != nil || freed != 30 {
		t.Errorf("DeleteUnusedImages = %d, %v; want 30", freed, err)
	}
	cri.add("sha256:c", 1)
	if _, err := m.DeleteUnusedImages(context.Background()); err != nil { // first seen now
		t.Fatal(err)
	}
	clk.now = t0.Add(2 * time.Hour)
	cri.removeErr = errors.New("boom")
	if _, err := m.DeleteUnusedImages(context.Background()); err == nil || !strings.Contains(err.Error(), "boom") {
		t.Errorf("DeleteUnusedImages = %v, want the removal error", err)
	}
}

func TestNewValidatesPolicy(t *testing.T) {
	cri := &fakeCRI{}
	for _, p := range []Policy{{HighThresholdPercent: 101}, {HighThresholdPercent: 50, LowThresholdPercent: -1}, {HighThresholdPercent: 50, LowThresholdPercent: 60}} {
		if _, err := New(Config{Policy: p, Images: cri, Containers: cri, NodeName: "n"}); err == nil {
			t.Errorf("New(%+v) accepted", p)
		}
	}
}

func TestSandboxImage(t *testing.T) {
	st := statusFunc(func() *criv1.StatusResponse {
		return &criv1.StatusResponse{Info: map[string]string{"config": `{"sandboxImage":"localhost/nodeagent/pause:3.10"}`}}
	})
	if got, err := SandboxImage(context.Background(), st); err != nil || got != "localhost/nodeagent/pause:3.10" {
		t.Errorf("SandboxImage = %q, %v", got, err)
	}
}

type statusFunc func() *criv1.StatusResponse

func (f statusFunc) Status(context.Context, bool) (*criv1.StatusResponse, error) { return f(), nil }

func TestNewPeriod(t *testing.T) {
	cri := &fakeCRI{}
	m, err := New(Config{Policy: policy, Images: cri, Containers: cri, NodeName: "n"})
	if err != nil || m.cfg.Period != Period {
		t.Errorf("New without a period = %v, period %s; want the kubelet's %s", err, m.cfg.Period, Period)
	}
	if _, err := New(Config{Policy: policy, Images: cri, Containers: cri, NodeName: "n", Period: -time.Second}); err == nil ||
		!strings.Contains(err.Error(), "Period must not be negative") {
		t.Errorf("New with a negative period = %v", err)
	}
}

// listSignal is a fakeCRI that says on lists when ListImages runs.
type listSignal struct {
	*fakeCRI
	lists chan struct{}
}

func (l listSignal) ListImages(ctx context.Context, f *criv1.ImageFilter) ([]*criv1.Image, error) {
	l.lists <- struct{}{}
	return l.fakeCRI.ListImages(ctx, f)
}

// TestRunEveryPeriod: Run collects at once and then every Config.Period
// (the kubelet's fixed 5 minutes would never come round in a test).
func TestRunEveryPeriod(t *testing.T) {
	cri := listSignal{fakeCRI: &fakeCRI{images: map[string]*criv1.Image{}}, lists: make(chan struct{})}
	m, err := New(Config{Policy: policy, Images: cri, Containers: cri, NodeName: "n", Period: time.Millisecond,
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { m.Run(ctx); close(done) }()
	for range 3 {
		<-cri.lists
	}
	cancel()
	for {
		select {
		case <-cri.lists: // a collection that began before the cancel
		case <-done:
			return
		}
	}
}

// TestGarbageCollectMakesUpForFailedRemoval: as upstream's freeSpace, an
// image that cannot be removed is made up for by the next in order, and
// the collection fails with the removal's error, without the
// FreeDiskSpaceFailed event.
func TestGarbageCollectMakesUpForFailedRemoval(t *testing.T) {
	m, cri, fs, rec, c, clk := newTestManager(t, policy)
	for _, id := range []string{"sha256:a", "sha256:b", "sha256:c"} {
		cri.add(id, 100)
	}
	if err := m.GarbageCollect(context.Background()); err != nil {
		t.Fatal(err)
	}
	clk.now = t0.Add(time.Hour)
	fs.available = 100 // 100 bytes to free: a alone, were it removable
	cri.failing = map[string]bool{"sha256:a": true}
	err := m.GarbageCollect(context.Background())
	if want := []string{"sha256:b"}; !reflect.DeepEqual(cri.removed, want) || c[ReasonSpace] != 1 {
		t.Errorf("removed %v (counted %v), want %v", cri.removed, c, want)
	}
	if err == nil || !strings.Contains(err.Error(), "wanted to free 100 bytes, but freed 100 bytes space with errors in image deletion: remove sha256:a: read-only") {
		t.Errorf("GarbageCollect = %v", err)
	}
	select {
	case e := <-rec.Events:
		t.Errorf("event %q", e)
	default:
	}
}
