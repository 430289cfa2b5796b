package network

import (
	"os"
	"path/filepath"
	"testing"
)

func TestWriteAtomic(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "10-n.conflist")
	steps := []struct {
		data        string
		wantChanged bool
	}{
		{"one", true},  // new file
		{"one", false}, // same content: not rewritten
		{"two", true},  // new content
	}
	for i, s := range steps {
		changed, err := WriteAtomic(dir, "10-n.conflist", []byte(s.data))
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if changed != s.wantChanged {
			t.Errorf("step %d: changed = %v, want %v", i, changed, s.wantChanged)
		}
		got, err := os.ReadFile(path)
		if err != nil || string(got) != s.data {
			t.Fatalf("step %d: file = %q, %v; want %q", i, got, err, s.data)
		}
		fi, err := os.Stat(path)
		if err != nil || fi.Mode().Perm() != 0o644 {
			t.Errorf("step %d: mode = %v, %v; want 0644", i, fi.Mode(), err)
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("directory holds %v; want only the config, no temp files", names)
	}
}

func TestWriteAtomicUnchangedKeepsFile(t *testing.T) {
	dir := t.TempDir()
	if _, err := WriteAtomic(dir, "f.conflist", []byte("x")); err != nil {
		t.Fatal(err)
	}
	before, _ := os.Stat(filepath.Join(dir, "f.conflist"))
	if _, err := WriteAtomic(dir, "f.conflist", []byte("x")); err != nil {
		t.Fatal(err)
	}
	after, _ := os.Stat(filepath.Join(dir, "f.conflist"))
	if !os.SameFile(before, after) {
		t.Error("unchanged content was rewritten (the file was replaced)")
	}
}

func TestWriteAtomicErrors(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"", "../x.conflist", "a/b.conflist", ".hidden"} {
		if _, err := WriteAtomic(dir, name, []byte("x")); err == nil {
			t.Errorf("WriteAtomic(%q): want an error", name)
		}
	}
	missing := filepath.Join(dir, "missing")
	if _, err := WriteAtomic(missing, "f.conflist", []byte("x")); err == nil {
		t.Error("WriteAtomic into a missing directory: want an error")
	}
	if _, err := os.Stat(missing); err == nil {
		t.Error("WriteAtomic created the missing directory")
	}
}
