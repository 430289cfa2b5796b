package logrotate

import (
	"compress/gzip"
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	criv1 "k8s.io/cri-api/pkg/apis/runtime/v1"
	critest "k8s.io/cri-api/pkg/apis/testing"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/nodeagent/nodeagent/pkg/runtime"
)

var (
	_ Runtime = (*runtime.Client)(nil)
	_ Runtime = (*fakeRuntime)(nil)
)

// waitTimeout only guards against a hung test; no test asserts how long
// anything took.
const waitTimeout = 30 * time.Second

// t0 is the fake clock's start; its rotated-file suffix is ts0.
var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

const ts0 = "20260102-030405"

// fakeRuntime is the cri-api fake plus what containerd does on
// ReopenContainerLog: create a new file at the log path. listed and
// reopened, when set, receive a value after each such call.
type fakeRuntime struct {
	*critest.FakeRuntimeService
	listed   chan struct{}
	reopened chan string
}

func (f *fakeRuntime) ListContainers(ctx context.Context, filter *criv1.ContainerFilter) ([]*criv1.Container, error) {
	cs, err := f.FakeRuntimeService.ListContainers(ctx, filter)
	if f.listed != nil {
		f.listed <- struct{}{}
	}
	return cs, err
}

func (f *fakeRuntime) ReopenContainerLog(ctx context.Context, id string) error {
	if err := f.FakeRuntimeService.ReopenContainerLog(ctx, id); err != nil {
		return err
	}
	f.Lock()
	path := f.Containers[id].LogPath
	f.Unlock()
	fh, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o640)
	if err != nil {
		return err
	}
	fh.Close()
	if f.reopened != nil {
		f.reopened <- id
	}
	return nil
}

// container is a fake container whose log is dir/<id>/0.log.
func container(dir, id string, state criv1.ContainerState) *critest.FakeContainer {
	return &critest.FakeContainer{ContainerStatus: criv1.ContainerStatus{
		Id: id, State: state, LogPath: filepath.Join(dir, id, "0.log"),
		Metadata: &criv1.ContainerMetadata{Name: id},
	}}
}

// setup returns a manager over a fake runtime holding cs, with a fake clock
// at t0, MaxSize 10 bytes and the given MaxFiles.
func setup(t *testing.T, maxFiles int, cs ...*critest.FakeContainer) (*Manager, *fakeRuntime, *testingclock.FakeClock) {
	t.Helper()
	rt := &fakeRuntime{FakeRuntimeService: critest.NewFakeRuntimeService()}
	rt.SetFakeContainers(cs)
	for _, c := range cs {
		if err := os.MkdirAll(filepath.Dir(c.LogPath), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	clk := testingclock.NewFakeClock(t0)
	m, err := New(Config{Runtime: rt, MaxSize: 10, MaxFiles: maxFiles, Clock: clk,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	return m, rt, clk
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o640); err != nil {
		t.Fatal(err)
	}
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func gunzip(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return string(b)
}

// names lists the base names in dir, sorted.
func names(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		out = append(out, e.Name())
	}
	slices.Sort(out)
	return out
}

func count(calls []string, name string) int {
	n := 0
	for _, c := range calls {
		if c == name {
			n++
		}
	}
	return n
}

func recv[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(waitTimeout):
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}
