package volume

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	v1 "k8s.io/api/core/v1"
)

func gidOf(t *testing.T, path string) uint32 {
	t.Helper()
	info, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	return info.Sys().(*syscall.Stat_t).Gid
}

func TestOwnershipApply(t *testing.T) {
	requireRoot(t)
	for _, tt := range []struct {
		name               string
		readOnly           bool
		wantFile, wantRoot os.FileMode
	}{
		{"writable", false, 0o660, 0o770 | os.ModeSetgid},
		{"read-only", true, 0o640, 0o750 | os.ModeSetgid},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.Chmod(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			file := filepath.Join(dir, "f")
			mustWrite(t, file, "x")
			if err := os.Chmod(file, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink("f", filepath.Join(dir, "link")); err != nil {
				t.Fatal(err)
			}
			o := ownership{fsGroup: ptr(int64(2345)), readOnly: tt.readOnly}
			if err := o.apply(dir); err != nil {
				t.Fatal(err)
			}
			for _, p := range []string{dir, file, filepath.Join(dir, "link")} {
				if g := gidOf(t, p); g != 2345 {
					t.Errorf("%s gid %d, want 2345", p, g)
				}
			}
			if m := fileModeOf(t, file) & (os.ModePerm | os.ModeSetgid); m != tt.wantFile {
				t.Errorf("file mode %v, want %v", m, tt.wantFile)
			}
			if m := fileModeOf(t, dir) & (os.ModePerm | os.ModeSetgid); m != tt.wantRoot {
				t.Errorf("root mode %v, want %v", m, tt.wantRoot)
			}
		})
	}
}

func TestOwnershipNoFSGroup(t *testing.T) {
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := (ownership{}).apply(dir); err != nil {
		t.Fatal(err)
	}
	if m := fileModeOf(t, dir).Perm(); m != 0o700 {
		t.Errorf("mode changed to %o without fsGroup", m)
	}
}

func TestOwnershipOnRootMismatch(t *testing.T) {
	requireRoot(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	mustWrite(t, file, "x")
	policy := v1.FSGroupChangeOnRootMismatch
	o := ownership{fsGroup: ptr(int64(2345)), policy: &policy}
	if err := o.apply(dir); err != nil {
		t.Fatal(err)
	}
	if g := gidOf(t, file); g != 2345 {
		t.Fatalf("first apply: file gid %d", g)
	}
	// The root now matches: a file changed since is not walked to.
	if err := os.Chown(file, 0, 0); err != nil {
		t.Fatal(err)
	}
	if err := o.apply(dir); err != nil {
		t.Fatal(err)
	}
	if g := gidOf(t, file); g != 0 {
		t.Errorf("OnRootMismatch walked a matching root (file gid %d)", g)
	}
	// Always walks regardless.
	always := v1.FSGroupChangeAlways
	o.policy = &always
	if err := o.apply(dir); err != nil {
		t.Fatal(err)
	}
	if g := gidOf(t, file); g != 2345 {
		t.Errorf("Always did not walk (file gid %d)", g)
	}
}
