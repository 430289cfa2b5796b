package runtime

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	criv1 "k8s.io/cri-api/pkg/apis/runtime/v1"
)

var logT0 = time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC)

// rec formats a CRI log record written sec seconds after logT0.
func rec(sec int, stream, tag, content string) string {
	ts := logT0.Add(time.Duration(sec) * time.Second).Format(time.RFC3339Nano)
	return fmt.Sprintf("%s %s %s %s\n", ts, stream, tag, content)
}

func writeLog(t *testing.T, records ...string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "c", "0.log")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(strings.Join(records, "")), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func readAll(t *testing.T, path string, opts LogOptions) string {
	t.Helper()
	var out bytes.Buffer
	if err := ReadLogs(context.Background(), path, "", opts, nil, &out, &out); err != nil {
		t.Fatalf("ReadLogs: %v", err)
	}
	return out.String()
}

func i64(n int64) *int64 { return &n }

func TestReadLogs(t *testing.T) {
	path := writeLog(t,
		rec(0, "stdout", "F", "one"),
		rec(1, "stderr", "F", "two"),
		rec(2, "stdout", "P", "thr"),
		rec(3, "stdout", "P", "e"),
		rec(4, "stdout", "F", "e"),
		rec(5, "stdout", "F", "four"),
	)
	ts := func(sec int) string { return logT0.Add(time.Duration(sec)*time.Second).Format(logTimeOut) + " " }
	tests := []struct {
		name string
		opts LogOptions
		want string
	}{
		{"all, partial records joined", LogOptions{}, "one\ntwo\nthree\nfour\n"},
		{"timestamps once per line", LogOptions{Timestamps: true},
			ts(0) + "one\n" + ts(1) + "two\n" + ts(2) + "three\n" + ts(5) + "four\n"},
		{"tail counts a partial line once", LogOptions{TailLines: i64(2)}, "three\nfour\n"},
		{"tail 1", LogOptions{TailLines: i64(1)}, "four\n"},
		{"tail 0", LogOptions{TailLines: i64(0)}, ""},
		{"tail more than there is", LogOptions{TailLines: i64(100)}, "one\ntwo\nthree\nfour\n"},
		{"since skips whole lines", LogOptions{Since: logT0.Add(3 * time.Second)}, "four\n"},
		{"since at a line start", LogOptions{Since: logT0.Add(2 * time.Second)}, "three\nfour\n"},
		{"limitBytes", LogOptions{LimitBytes: i64(6)}, "one\ntw"},
		{"limitBytes with timestamps", LogOptions{LimitBytes: i64(10), Timestamps: true}, ts(0)[:10]},
		{"tail and limit", LogOptions{TailLines: i64(2), LimitBytes: i64(8)}, "three\nfo"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := readAll(t, path, tt.opts); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestReadLogsStreams(t *testing.T) {
	path := writeLog(t,
		rec(0, "stdout", "P", "out-"),
		rec(1, "stderr", "F", "err"),
		rec(2, "stdout", "F", "line"),
	)
	var stdout, stderr bytes.Buffer
	if err := ReadLogs(context.Background(), path, "", LogOptions{Timestamps: true}, nil, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	if want := logT0.Format(logTimeOut) + " out-line\n"; stdout.String() != want {
		t.Errorf("stdout = %q, want %q (a partial line is joined within its stream)", stdout.String(), want)
	}
	if want := logT0.Add(time.Second).Format(logTimeOut) + " err\n"; stderr.String() != want {
		t.Errorf("stderr = %q, want %q", stderr.String(), want)
	}
	stdout.Reset()
	if err := ReadLogs(context.Background(), path, "", LogOptions{LimitBytes: i64(7)}, nil, &stdout, nil); err != nil {
		t.Fatal(err)
	}
	if stdout.String() != "out-lin" {
		t.Errorf("stdout only, limited = %q: a dropped stream must not use the byte limit", stdout.String())
	}
}

func TestReadLogsSkipsBadRecordsAndKeepsAnIncompleteOne(t *testing.T) {
	path := writeLog(t, "garbage line\n", rec(0, "stdout", "F", "ok"),
		logT0.Format(time.RFC3339Nano)+" stdout F unfinished")
	if got := readAll(t, path, LogOptions{}); got != "ok\nunfinished" {
		t.Errorf("got %q", got)
	}
}

func TestTailAcrossBlocks(t *testing.T) {
	var records []string
	for i := range 500 {
		records = append(records, rec(i, "stdout", "P", strings.Repeat("x", 20)), rec(i, "stdout", "F", fmt.Sprintf("%03d", i)))
	}
	path := writeLog(t, records...)
	got := readAll(t, path, LogOptions{TailLines: i64(3)})
	want := strings.Repeat("x", 20) + "497\n" + strings.Repeat("x", 20) + "498\n" + strings.Repeat("x", 20) + "499\n"
	if got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// fakeStatus reports a container running until stop is called.
type fakeStatus struct{ stopped atomic.Bool }

func (f *fakeStatus) ContainerStatus(_ context.Context, id string, _ bool) (*criv1.ContainerStatusResponse, error) {
	state := criv1.ContainerState_CONTAINER_RUNNING
	if f.stopped.Load() {
		state = criv1.ContainerState_CONTAINER_EXITED
	}
	return &criv1.ContainerStatusResponse{Status: &criv1.ContainerStatus{Id: id, State: state}}, nil
}

// chanWriter hands each write to the test.
type chanWriter struct {
	mu  sync.Mutex
	buf bytes.Buffer
	ch  chan struct{}
}

func (w *chanWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	w.buf.Write(p)
	w.mu.Unlock()
	select {
	case w.ch <- struct{}{}:
	default:
	}
	return len(p), nil
}

func (w *chanWriter) waitFor(t *testing.T, want string) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		w.mu.Lock()
		got := w.buf.String()
		w.mu.Unlock()
		if got == want {
			return
		}
		select {
		case <-w.ch:
		case <-deadline:
			t.Fatalf("output = %q, want %q", got, want)
		}
	}
}

func appendLog(t *testing.T, path string, records ...string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(strings.Join(records, "")); err != nil {
		t.Fatal(err)
	}
}

func TestFollowLogs(t *testing.T) {
	path := writeLog(t, rec(0, "stdout", "F", "old"), rec(1, "stdout", "F", "last"))
	rt := &fakeStatus{}
	out := &chanWriter{ch: make(chan struct{}, 1)}
	done := make(chan error, 1)
	go func() {
		done <- ReadLogs(context.Background(), path, "c1", LogOptions{Follow: true, TailLines: i64(1)}, rt, out, out)
	}()
	out.waitFor(t, "last\n")

	appendLog(t, path, rec(2, "stdout", "P", "new "), rec(3, "stdout", "F", "line"))
	out.waitFor(t, "last\nnew line\n")

	// Rotation as the kubelet does it: rename, then the runtime reopens.
	appendLog(t, path, rec(4, "stdout", "F", "before rotation"))
	if err := os.Rename(path, path+".20240501-100005"); err != nil {
		t.Fatal(err)
	}
	appendLog(t, path, rec(5, "stdout", "F", "after rotation"))
	out.waitFor(t, "last\nnew line\nbefore rotation\nafter rotation\n")

	appendLog(t, path, rec(6, "stderr", "F", "bye"))
	rt.stopped.Store(true)
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("follow did not end after the container stopped")
	}
	out.waitFor(t, "last\nnew line\nbefore rotation\nafter rotation\nbye\n")
}

// containerd's ReopenContainerLog creates the new file before it stops
// writing to the old one: a line written to the old file in between must
// still come, before the new file's lines.
func TestFollowReadsTheOldFileUntilTheNewOneHasData(t *testing.T) {
	path := writeLog(t, rec(0, "stdout", "F", "first"))
	rt := &fakeStatus{}
	out := &chanWriter{ch: make(chan struct{}, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = ReadLogs(ctx, path, "c1", LogOptions{Follow: true}, rt, out, out) }()
	out.waitFor(t, "first\n")

	rotated := path + ".20240501-100002"
	if err := os.Rename(path, rotated); err != nil {
		t.Fatal(err)
	}
	appendLog(t, path) // the runtime's new, still empty file
	// Long enough for the reader to see the new file and, before this
	// fix, switch to it.
	time.Sleep(3 * logForceCheckPeriod / 2)
	appendLog(t, rotated, rec(1, "stdout", "F", "late in the old file"))
	appendLog(t, path, rec(2, "stdout", "F", "new file"))
	out.waitFor(t, "first\nlate in the old file\nnew file\n")
}

// TestFollowAcrossUndoneRotation: when the runtime refuses to reopen,
// pkg/logrotate renames the file back; the reader must not start over.
func TestFollowAcrossUndoneRotation(t *testing.T) {
	path := writeLog(t, rec(0, "stdout", "F", "first"))
	rt := &fakeStatus{}
	out := &chanWriter{ch: make(chan struct{}, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = ReadLogs(ctx, path, "c1", LogOptions{Follow: true}, rt, out, out) }()
	out.waitFor(t, "first\n")

	rotated := path + ".20240501-100001"
	if err := os.Rename(path, rotated); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(rotated, path); err != nil {
		t.Fatal(err)
	}
	appendLog(t, path, rec(1, "stdout", "F", "second"))
	out.waitFor(t, "first\nsecond\n")
	appendLog(t, path, rec(2, "stdout", "F", "third"))
	out.waitFor(t, "first\nsecond\nthird\n")
}

func TestFollowEndsWithTheClient(t *testing.T) {
	path := writeLog(t, rec(0, "stdout", "F", "x"))
	ctx, cancel := context.WithCancel(context.Background())
	out := &chanWriter{ch: make(chan struct{}, 1)}
	done := make(chan error, 1)
	go func() { done <- ReadLogs(ctx, path, "c1", LogOptions{Follow: true}, &fakeStatus{}, out, out) }()
	out.waitFor(t, "x\n")
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("follow did not end with its context")
	}
}

func TestFollowStoppedContainerReadsToTheEnd(t *testing.T) {
	path := writeLog(t, rec(0, "stdout", "F", "a"), rec(1, "stdout", "F", "b"))
	rt := &fakeStatus{}
	rt.stopped.Store(true)
	var out bytes.Buffer
	if err := ReadLogs(context.Background(), path, "c1", LogOptions{Follow: true}, rt, &out, &out); err != nil {
		t.Fatal(err)
	}
	if out.String() != "a\nb\n" {
		t.Errorf("got %q", out.String())
	}
}
