package volume

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

func isTmpfs(t *testing.T, dir string) bool {
	t.Helper()
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	return st.Type == unix.TMPFS_MAGIC
}

func TestMountInfoPoint(t *testing.T) {
	line := `36 35 98:0 /mnt1 /mnt/with\040space rw,noatime master:1 - ext3 /dev/root rw,errors=continue`
	mp, ok := mountInfoPoint(line)
	if !ok || mp != "/mnt/with space" {
		t.Errorf("mount point %q %v", mp, ok)
	}
	if _, ok := mountInfoPoint("short line"); ok {
		t.Error("short line parsed")
	}
	if got := unescapeOctal(`a\011b\\c\0`); got != "a\tb\\\\c\\0" {
		t.Errorf("unescape = %q", got)
	}
}

func TestSysMounterTmpfs(t *testing.T) {
	requireRoot(t)
	dir := filepath.Join(t.TempDir(), "vol")
	mustMkdirAll(t, dir)
	m := SysMounter{}
	if mp, err := m.IsMountPoint(dir); err != nil || mp {
		t.Fatalf("fresh dir is a mount point: %v %v", mp, err)
	}
	if err := m.MountTmpfs(dir, 1<<20); err != nil {
		t.Skipf("cannot mount tmpfs here: %v", err)
	}
	t.Cleanup(func() { _ = unix.Unmount(dir, unix.MNT_DETACH) })
	if mp, err := m.IsMountPoint(dir); err != nil || !mp {
		t.Fatalf("tmpfs not seen as mount point: %v %v", mp, err)
	}
	if !isTmpfs(t, dir) {
		t.Error("not a tmpfs")
	}
	if perm := fileModeOf(t, dir).Perm(); perm != 0o755 {
		t.Errorf("tmpfs root mode %o, want 755", perm)
	}
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err == nil && uint64(st.Blocks)*uint64(st.Bsize) != 1<<20 {
		t.Errorf("tmpfs size %d, want 1MiB", uint64(st.Blocks)*uint64(st.Bsize))
	}
	// Busy (a file held open): the detach fallback still unmounts.
	f, err := os.Create(filepath.Join(dir, "held"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := m.Unmount(dir); err != nil {
		t.Fatal(err)
	}
	if mp, _ := m.IsMountPoint(dir); mp {
		t.Error("still mounted after Unmount")
	}
}

// TestSysMounterBindMount: a bind mount of the same file system has the
// parent's device; only the mount table tells.
func TestSysMounterBindMount(t *testing.T) {
	requireRoot(t)
	base := t.TempDir()
	src, dst := filepath.Join(base, "src"), filepath.Join(base, "dst")
	mustMkdirAll(t, src)
	mustMkdirAll(t, dst)
	if err := unix.Mount(src, dst, "", unix.MS_BIND, ""); err != nil {
		t.Skipf("cannot bind mount here: %v", err)
	}
	t.Cleanup(func() { _ = unix.Unmount(dst, unix.MNT_DETACH) })
	mp, err := SysMounter{}.IsMountPoint(dst)
	if err != nil || !mp {
		t.Errorf("bind mount not seen: %v %v", mp, err)
	}
	if mp, _ := (SysMounter{}).IsMountPoint(src); mp {
		t.Error("bind source seen as mount point")
	}
}
