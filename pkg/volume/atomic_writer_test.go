package volume

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
)

func newWriter(t *testing.T) (*AtomicWriter, string) {
	t.Helper()
	dir := t.TempDir()
	w, err := NewAtomicWriter(dir)
	if err != nil {
		t.Fatal(err)
	}
	return w, dir
}

func TestAtomicWriterLayout(t *testing.T) {
	w, dir := newWriter(t)
	payload := map[string]FileProjection{
		"podName":         {Data: []byte("web"), Mode: 0o644},
		"user/labels":     {Data: []byte("a=\"b\""), Mode: 0o400},
		"k8s/x/annotated": {Data: []byte("z"), Mode: 0o600},
	}
	if err := w.Write(payload, nil); err != nil {
		t.Fatal(err)
	}
	ts, err := os.Readlink(filepath.Join(dir, "..data"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(ts, "..") || strings.Contains(ts, "/") {
		t.Errorf("..data -> %q, want a hidden sibling directory", ts)
	}
	if m := fileModeOf(t, filepath.Join(dir, ts)).Perm(); m != 0o755 {
		t.Errorf("timestamped dir mode %o, want 755", m)
	}
	for link, target := range map[string]string{"podName": "..data/podName", "user": "..data/user", "k8s": "..data/k8s"} {
		got, err := os.Readlink(filepath.Join(dir, link))
		if err != nil || got != target {
			t.Errorf("%s -> %q (%v), want %q", link, got, err, target)
		}
	}
	if got := readFile(t, filepath.Join(dir, "user/labels")); got != "a=\"b\"" {
		t.Errorf("user/labels = %q", got)
	}
	for p, want := range map[string]os.FileMode{"podName": 0o644, "user/labels": 0o400, "k8s/x/annotated": 0o600} {
		if m := fileModeOf(t, filepath.Join(dir, p)).Perm(); m != want {
			t.Errorf("%s mode %o, want %o", p, m, want)
		}
	}
	if exists(filepath.Join(dir, "..data_tmp")) {
		t.Error("..data_tmp left behind")
	}
}

func TestAtomicWriterModeIgnoresUmask(t *testing.T) {
	old := syscall.Umask(0o077)
	defer syscall.Umask(old)
	w, dir := newWriter(t)
	if err := w.Write(map[string]FileProjection{"f": {Data: []byte("x"), Mode: 0o666}}, nil); err != nil {
		t.Fatal(err)
	}
	if m := fileModeOf(t, filepath.Join(dir, "f")).Perm(); m != 0o666 {
		t.Errorf("mode %o, want 666", m)
	}
}

func TestAtomicWriterUnchangedIsNoop(t *testing.T) {
	w, dir := newWriter(t)
	payload := map[string]FileProjection{"a": {Data: []byte("1"), Mode: 0o644}}
	if err := w.Write(payload, nil); err != nil {
		t.Fatal(err)
	}
	before, _ := os.Readlink(filepath.Join(dir, "..data"))
	calls := 0
	if err := w.Write(payload, func(string) error { calls++; return nil }); err != nil {
		t.Fatal(err)
	}
	after, _ := os.Readlink(filepath.Join(dir, "..data"))
	if before != after || calls != 0 {
		t.Errorf("unchanged payload rewrote: %s -> %s, setPerms calls %d", before, after, calls)
	}
}

func TestAtomicWriterUnchangedRestoresLinks(t *testing.T) {
	w, dir := newWriter(t)
	payload := map[string]FileProjection{"a": {Data: []byte("1"), Mode: 0o644}}
	if err := w.Write(payload, nil); err != nil {
		t.Fatal(err)
	}
	// As after a crash between the rename and the links.
	if err := os.Remove(filepath.Join(dir, "a")); err != nil {
		t.Fatal(err)
	}
	if err := w.Write(payload, nil); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, filepath.Join(dir, "a")); got != "1" {
		t.Errorf("a = %q", got)
	}
}

func TestAtomicWriterUpdateRemovesStale(t *testing.T) {
	w, dir := newWriter(t)
	first := map[string]FileProjection{
		"keep": {Data: []byte("1"), Mode: 0o644}, "gone": {Data: []byte("2"), Mode: 0o644},
		"d/gone": {Data: []byte("3"), Mode: 0o644}, "e/keep": {Data: []byte("4"), Mode: 0o644},
		"e/gone": {Data: []byte("5"), Mode: 0o644},
	}
	if err := w.Write(first, nil); err != nil {
		t.Fatal(err)
	}
	oldTs, _ := os.Readlink(filepath.Join(dir, "..data"))
	second := map[string]FileProjection{
		"keep": {Data: []byte("1b"), Mode: 0o644}, "e/keep": {Data: []byte("4"), Mode: 0o644},
	}
	if err := w.Write(second, nil); err != nil {
		t.Fatal(err)
	}
	if got := visibleNames(t, dir); !slices.Equal(got, []string{"e", "keep"}) {
		t.Errorf("visible = %v, want [e keep]", got)
	}
	if exists(filepath.Join(dir, "e/gone")) {
		t.Error("e/gone still visible")
	}
	if exists(filepath.Join(dir, oldTs)) {
		t.Error("old timestamped dir not removed")
	}
	if got := readFile(t, filepath.Join(dir, "keep")); got != "1b" {
		t.Errorf("keep = %q", got)
	}
	// Dropping a key alone (no content change) is an update too.
	if err := w.Write(map[string]FileProjection{"keep": {Data: []byte("1b"), Mode: 0o644}}, nil); err != nil {
		t.Fatal(err)
	}
	if got := visibleNames(t, dir); !slices.Equal(got, []string{"keep"}) {
		t.Errorf("visible = %v, want [keep]", got)
	}
}

func TestAtomicWriterSetPermsBeforePublish(t *testing.T) {
	w, dir := newWriter(t)
	var seen string
	err := w.Write(map[string]FileProjection{"a": {Data: []byte("1"), Mode: 0o644}}, func(ts string) error {
		seen = ts
		if exists(filepath.Join(dir, "..data")) {
			t.Error("..data published before setPerms")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if cur, _ := os.Readlink(filepath.Join(dir, "..data")); cur != seen {
		t.Errorf("setPerms saw %q, published %q", seen, cur)
	}
	failing := errors.New("boom")
	err = w.Write(map[string]FileProjection{"a": {Data: []byte("2"), Mode: 0o644}}, func(string) error { return failing })
	if !errors.Is(err, failing) {
		t.Fatalf("err = %v, want boom", err)
	}
	if got := readFile(t, filepath.Join(dir, "a")); got != "1" {
		t.Errorf("failed write changed content to %q", got)
	}
}

func TestAtomicWriterFsUser(t *testing.T) {
	requireRoot(t)
	w, dir := newWriter(t)
	if err := w.Write(map[string]FileProjection{"token": {Data: []byte("t"), Mode: 0o600, FsUser: ptr(int64(4321))}}, nil); err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(filepath.Join(dir, "token"))
	if err != nil {
		t.Fatal(err)
	}
	if uid := info.Sys().(*syscall.Stat_t).Uid; uid != 4321 {
		t.Errorf("owner %d, want 4321", uid)
	}
}

func TestValidatePath(t *testing.T) {
	long := strings.Repeat("a", 256)
	tests := []struct {
		path, wantErr string
	}{
		{"a", ""},
		{"a/b/c", ""},
		{"..a", "invalid path: must not start with '..': ..a"},
		{"a/..b", ""},
		{"", `invalid path: must not be empty: ""`},
		{"/etc/passwd", "invalid path: must be relative path: /etc/passwd"},
		{"../x", "invalid path: must not contain '..': ../x"},
		{"a/../../x", "invalid path: must not contain '..': a/../../x"},
		{"..data", "invalid path: must not start with '..': ..data"},
		{"..data/x", "invalid path: must not start with '..': ..data/x"},
		{long, "invalid path: filenames must be less than or equal to 255 characters"},
		{strings.Repeat("a/", 2049), "invalid path: must be less than or equal to 4096 characters"},
	}
	for _, tt := range tests {
		err := validatePath(tt.path)
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != tt.wantErr {
			t.Errorf("validatePath(%.20q) = %q, want %q", tt.path, got, tt.wantErr)
		}
	}
}

func TestAtomicWriterRejectsTraversal(t *testing.T) {
	w, dir := newWriter(t)
	for _, p := range []string{"../escape", "/abs", "..data"} {
		if err := w.Write(map[string]FileProjection{p: {Data: []byte("x"), Mode: 0o644}}, nil); err == nil {
			t.Errorf("Write(%q) succeeded", p)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("rejected payloads wrote %d entries", len(entries))
	}
	if exists(filepath.Join(filepath.Dir(dir), "escape")) {
		t.Error("wrote outside the target")
	}
}

// TestAtomicWriterConcurrentReader flips between two payloads while
// readers read: every read must be one complete version of a file, and
// every snapshot taken through "..data" one complete payload.
func TestAtomicWriterConcurrentReader(t *testing.T) {
	w, dir := newWriter(t)
	versions := []map[string]FileProjection{
		{"a": {Data: bytes.Repeat([]byte("A"), 64<<10), Mode: 0o644}, "sub/b": {Data: []byte("b1"), Mode: 0o644}},
		{"a": {Data: bytes.Repeat([]byte("Z"), 100<<10), Mode: 0o644}, "sub/b": {Data: []byte("b2-longer"), Mode: 0o644}},
	}
	if err := w.Write(versions[0], nil); err != nil {
		t.Fatal(err)
	}
	var stop atomic.Bool
	var reads, snapshots atomic.Int64
	var wg sync.WaitGroup
	fail := make(chan string, 16)
	report := func(msg string) {
		select {
		case fail <- msg:
		default:
		}
	}
	wg.Add(2)
	go func() {
		defer wg.Done()
		for !stop.Load() {
			readVisible(dir, versions, report, &reads)
		}
	}()
	go func() {
		defer wg.Done()
		for !stop.Load() {
			readSnapshot(dir, versions, report, &snapshots)
		}
	}()
	for i := 1; i <= 300; i++ {
		if err := w.Write(versions[i%2], nil); err != nil {
			t.Fatal(err)
		}
	}
	stop.Store(true)
	wg.Wait()
	close(fail)
	for msg := range fail {
		t.Error(msg)
	}
	if reads.Load() == 0 || snapshots.Load() == 0 {
		t.Errorf("readers did not run: %d reads, %d snapshots", reads.Load(), snapshots.Load())
	}
}

// readVisible reads each file through its user-visible path. A path can
// vanish for an instant (its old timestamped directory removed while
// being resolved), but what is read is always whole.
func readVisible(dir string, versions []map[string]FileProjection, report func(string), n *atomic.Int64) {
	for _, key := range []string{"a", "sub/b"} {
		got, err := os.ReadFile(filepath.Join(dir, key))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			report("read " + key + ": " + err.Error())
			return
		}
		if !bytes.Equal(got, versions[0][key].Data) && !bytes.Equal(got, versions[1][key].Data) {
			report("partial content of " + key)
		}
		n.Add(1)
	}
}

// readSnapshot resolves "..data" once and reads everything below it: a
// consistent payload, or nothing if the directory went away meanwhile.
func readSnapshot(dir string, versions []map[string]FileProjection, report func(string), n *atomic.Int64) {
	ts, err := os.Readlink(filepath.Join(dir, "..data"))
	if err != nil {
		report("..data missing: " + err.Error())
		return
	}
	a, errA := os.ReadFile(filepath.Join(dir, ts, "a"))
	b, errB := os.ReadFile(filepath.Join(dir, ts, "sub/b"))
	if errors.Is(errA, os.ErrNotExist) || errors.Is(errB, os.ErrNotExist) {
		return
	}
	if errA != nil || errB != nil {
		report("snapshot read failed")
		return
	}
	for _, v := range versions {
		if bytes.Equal(a, v["a"].Data) && bytes.Equal(b, v["sub/b"].Data) {
			n.Add(1)
			return
		}
	}
	report("snapshot mixes versions or is partial")
}
