package atomicfile

import (
	"os"
	"path/filepath"
	"testing"
)

func TestWrite(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sa.key")
	if err := Write(path, []byte("one"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := Write(path, []byte("two"), 0o600); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil || string(b) != "two" {
		t.Errorf("content %q, %v; want \"two\"", b, err)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, %v; want 0600", fi.Mode(), err)
	}
	assertOnly(t, dir, "sa.key")
}

// A failed write leaves the old file and no temporary file behind.
func TestWriteFailureKeepsTheOldFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sa.key")
	if err := Write(path, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	// A directory where the file should go: the rename fails.
	blocked := filepath.Join(dir, "blocked")
	if err := os.MkdirAll(filepath.Join(blocked, "x"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := Write(blocked, []byte("new"), 0o600); err == nil {
		t.Error("rename over a non-empty directory: no error")
	}
	b, err := os.ReadFile(path)
	if err != nil || string(b) != "old" {
		t.Errorf("content %q, %v; want \"old\"", b, err)
	}
	assertOnly(t, dir, "blocked", "sa.key")
	if err := Write(filepath.Join(dir, "missing", "k"), nil, 0o600); err == nil {
		t.Error("a missing directory: no error")
	}
}

func assertOnly(t *testing.T, dir string, names ...string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	if len(got) != len(names) {
		t.Errorf("directory holds %v, want %v", got, names)
		return
	}
	for i := range got {
		if got[i] != names[i] {
			t.Errorf("directory holds %v, want %v", got, names)
			return
		}
	}
}
