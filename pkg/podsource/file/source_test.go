package file

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/nodeagent/nodeagent/pkg/podsource"
	"github.com/nodeagent/nodeagent/pkg/podutil"
)

func newSource(t *testing.T, dir string, resync time.Duration) *Source {
	t.Helper()
	s, err := New(Config{Dir: dir, NodeName: node, ResyncPeriod: resync,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestNew(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		ok   bool
	}{
		{"ok", Config{Dir: "m", NodeName: "n"}, true},
		{"no dir", Config{NodeName: "n"}, false},
		{"no node", Config{Dir: "m"}, false},
		{"uppercase node", Config{Dir: "m", NodeName: "Node-1"}, false},
		{"negative resync", Config{Dir: "m", NodeName: "n", ResyncPeriod: -time.Second}, false},
	}
	for _, tt := range tests {
		s, err := New(tt.cfg)
		if (err == nil) != tt.ok {
			t.Errorf("%s: err = %v, want ok=%v", tt.name, err, tt.ok)
		}
		if err == nil && (!filepath.IsAbs(s.Dir()) || s.resync != DefaultResyncPeriod) {
			t.Errorf("%s: dir %q resync %v", tt.name, s.Dir(), s.resync)
		}
	}
}

// step is one change to the directory followed by a rescan.
type step struct {
	name      string
	apply     func(t *testing.T, dir string)
	wantPods  []string // namespace/name, sorted
	changed   bool
	wantErrs  []string // base names of files that must have an error
	errSubstr string   // substring of the first file's error
}

func write(name, data string) func(*testing.T, string) {
	return func(t *testing.T, dir string) { writeFile(t, filepath.Join(dir, name), data) }
}

func remove(name string) func(*testing.T, string) {
	return func(t *testing.T, dir string) {
		if err := os.RemoveAll(filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
}

func TestRescan(t *testing.T) {
	bad := "apiVersion: v1\nkind: Pod\nmetadata:\n  name: a\nspec:\n  containers:\n  - name: Bad_Name\n"
	steps := []step{
		{name: "empty", apply: func(*testing.T, string) {}, changed: true},
		{name: "two files", apply: func(t *testing.T, dir string) {
			write("a.yaml", podYAML("a", "busybox"))(t, dir)
			write("b.json", strings.Replace(podJSON, "kube-system", "default", 1))(t, dir)
		}, wantPods: []string{"default/a-node-1", "default/web-node-1"}, changed: true},
		{name: "hidden files and subdirectories ignored", apply: func(t *testing.T, dir string) {
			write(".a.yaml.swp", podYAML("hidden", "busybox"))(t, dir)
			if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
				t.Fatal(err)
			}
			write("sub/c.yaml", podYAML("sub", "busybox"))(t, dir)
		}, wantPods: []string{"default/a-node-1", "default/web-node-1"}},
		{name: "rewrite with same content is no change", apply: write("a.yaml", podYAML("a", "busybox")),
			wantPods: []string{"default/a-node-1", "default/web-node-1"}},
		{name: "invalid manifest keeps last good pods", apply: write("a.yaml", bad),
			wantPods: []string{"default/a-node-1", "default/web-node-1"}, wantErrs: []string{"a.yaml"}, errSubstr: "spec.containers"},
		{name: "unparsable new file contributes nothing", apply: write("c.yaml", "kind: [\n"),
			wantPods: []string{"default/a-node-1", "default/web-node-1"}, wantErrs: []string{"a.yaml", "c.yaml"}},
		{name: "fixed file changes content", apply: write("a.yaml", podYAML("a", "busybox:2")),
			wantPods: []string{"default/a-node-1", "default/web-node-1"}, changed: true, wantErrs: []string{"c.yaml"}},
		{name: "duplicate name: first file wins", apply: write("0-dup.yaml", podYAML("a", "other")),
			wantPods: []string{"default/a-node-1", "default/web-node-1"}, wantErrs: []string{"0-dup.yaml", "c.yaml"}, errSubstr: "duplicate pod default/a-node-1"},
		{name: "deleting the winner lets the duplicate in", apply: remove("a.yaml"),
			wantPods: []string{"default/a-node-1", "default/web-node-1"}, changed: true, wantErrs: []string{"c.yaml"}},
		{name: "deleted files leave", apply: func(t *testing.T, dir string) {
			remove("0-dup.yaml")(t, dir)
			remove("c.yaml")(t, dir)
		}, wantPods: []string{"default/web-node-1"}, changed: true},
		{name: "directory removed", apply: remove(""), changed: true},
	}
	dir := t.TempDir()
	s := newSource(t, dir, 0)
	for _, st := range steps {
		st.apply(t, dir)
		pods, changed := s.rescan()
		if got := strings.Join(names(pods), ","); got != strings.Join(st.wantPods, ",") {
			t.Errorf("%s: pods = %s, want %v", st.name, got, st.wantPods)
		}
		if changed != st.changed {
			t.Errorf("%s: changed = %v, want %v", st.name, changed, st.changed)
		}
		checkErrors(t, st, dir, s.Errors())
	}
}

func TestDuplicateOnFreshStartFirstFileNameWins(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "b.yaml"), podYAML("web", "from-b"))
	writeFile(t, filepath.Join(dir, "a.yaml"), podYAML("web", "from-a"))
	pods, _ := newSource(t, dir, 0).rescan()
	if len(pods) != 1 || pods[0].Spec.Containers[0].Image != "from-a" {
		t.Fatalf("pods = %v, want web from a.yaml", pods)
	}
}

func checkErrors(t *testing.T, st step, dir string, errs map[string]string) {
	t.Helper()
	if len(errs) != len(st.wantErrs) {
		t.Errorf("%s: errors = %v, want files %v", st.name, errs, st.wantErrs)
	}
	for i, f := range st.wantErrs {
		msg, ok := errs[filepath.Join(dir, f)]
		if !ok {
			t.Errorf("%s: no error for %s in %v", st.name, f, errs)
		}
		if i == 0 && !strings.Contains(msg, st.errSubstr) {
			t.Errorf("%s: error %q does not contain %q", st.name, msg, st.errSubstr)
		}
	}
}

func TestRescanKeepsUIDAndSeen(t *testing.T) {
	dir := t.TempDir()
	s := newSource(t, dir, 0)
	path := filepath.Join(dir, "web.yaml")
	writeFile(t, path, podYAML("web", "nginx:1"))
	first, _ := s.rescan()
	writeFile(t, path, podYAML("web", "nginx:2"))
	second, changed := s.rescan()
	if !changed || len(first) != 1 || len(second) != 1 {
		t.Fatalf("changed=%v first=%v second=%v", changed, names(first), names(second))
	}
	a, b := first[0], second[0]
	if a.UID != b.UID || a.Annotations[podutil.ConfigSeenAnnotation] != b.Annotations[podutil.ConfigSeenAnnotation] {
		t.Errorf("UID/seen changed: %s/%s vs %s/%s", a.UID, a.Annotations[podutil.ConfigSeenAnnotation], b.UID, b.Annotations[podutil.ConfigSeenAnnotation])
	}
	if _, err := time.Parse(time.RFC3339Nano, a.Annotations[podutil.ConfigSeenAnnotation]); err != nil {
		t.Errorf("config.seen: %v", err)
	}
	if a.Annotations[podsource.ContentHashAnnotation] == b.Annotations[podsource.ContentHashAnnotation] {
		t.Errorf("content hash did not change")
	}
	b.Annotations["mutated"] = "x" // snapshots are copies
	if third, _ := s.rescan(); third[0].Annotations["mutated"] != "" {
		t.Errorf("snapshot shares memory with the source")
	}
}

// runSource starts Run and returns the channel of snapshots.
func runSource(t *testing.T, s *Source) <-chan []*v1.Pod {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	out := make(chan []*v1.Pod)
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx, out) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	return out
}

// waitFor receives snapshots until one has exactly the wanted pods.
func waitFor(t *testing.T, ch <-chan []*v1.Pod, want ...string) []*v1.Pod {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case pods := <-ch:
			if strings.Join(names(pods), ",") == strings.Join(want, ",") {
				return pods
			}
		case <-timeout:
			t.Fatalf("timed out waiting for pods %v", want)
		}
	}
}

func TestRunWatchesDirectory(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "a.yaml"), podYAML("a", "busybox"))
	ch := runSource(t, newSource(t, dir, time.Hour)) // resync never fires
	waitFor(t, ch, "default/a-node-1")

	writeFile(t, filepath.Join(dir, "b.yaml"), podYAML("b", "busybox"))
	waitFor(t, ch, "default/a-node-1", "default/b-node-1")

	tmp := filepath.Join(t.TempDir(), "c.yaml")
	writeFile(t, tmp, podYAML("c", "busybox"))
	if err := os.Rename(tmp, filepath.Join(dir, "c.yaml")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ch, "default/a-node-1", "default/b-node-1", "default/c-node-1")

	if err := os.Remove(filepath.Join(dir, "a.yaml")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ch, "default/b-node-1", "default/c-node-1")

	writeFile(t, filepath.Join(dir, "b.yaml"), podYAML("b", "busybox:2"))
	pods := waitFor(t, ch, "default/b-node-1", "default/c-node-1")
	if img := pods[0].Spec.Containers[0].Image; img != "busybox:2" {
		t.Errorf("image = %q after edit, want busybox:2", img)
	}
}

func TestRunMissingDirectoryAppears(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "manifests")
	ch := runSource(t, newSource(t, dir, time.Hour))
	waitFor(t, ch) // an empty snapshot at start

	tmp := filepath.Join(t.TempDir(), "staging")
	if err := os.Mkdir(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(tmp, "a.yaml"), podYAML("a", "busybox"))
	if err := os.Rename(tmp, dir); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ch, "default/a-node-1")

	// Once found, the directory is watched: a new file is seen.
	writeFile(t, filepath.Join(dir, "b.yaml"), podYAML("b", "busybox"))
	waitFor(t, ch, "default/a-node-1", "default/b-node-1")
}
