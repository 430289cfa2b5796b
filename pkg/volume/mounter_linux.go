package volume

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// SysMounter is the Mounter of a real node: mount(2) and umount(2).
type SysMounter struct {
	// MountInfo is the mount table to read; empty means
	// /proc/self/mountinfo.
	MountInfo string
}

var _ Mounter = SysMounter{}

// MountTmpfs mounts a tmpfs on dir with mode 0755 (only the agent writes
// a volume's root) and, when sizeBytes > 0, that size.
func (m SysMounter) MountTmpfs(dir string, sizeBytes int64) error {
	opts := "mode=0755"
	if sizeBytes > 0 {
		opts += ",size=" + strconv.FormatInt(sizeBytes, 10)
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, opts); err != nil {
		return fmt.Errorf("mount tmpfs on %s (%s): %w", dir, opts, err)
	}
	return nil
}

// Unmount unmounts dir; when it is busy it is detached instead, so that
// it goes away once its last user does.
func (m SysMounter) Unmount(dir string) error {
	err := unix.Unmount(dir, 0)
	if errors.Is(err, unix.EBUSY) {
		err = unix.Unmount(dir, unix.MNT_DETACH)
	}
	if err != nil {
		return fmt.Errorf("unmount %s: %w", dir, err)
	}
	return nil
}

// IsMountPoint tells whether something is mounted on dir. A device
// different from the parent's is the quick answer; a bind mount of the
// same file system needs the mount table.
func (m SysMounter) IsMountPoint(dir string) (bool, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return false, err
	}
	differs, err := deviceDiffersFromParent(dir)
	if err != nil || differs {
		return differs, err
	}
	return m.inMountTable(dir)
}

func deviceDiffersFromParent(dir string) (bool, error) {
	var st, parent unix.Stat_t
	if err := unix.Lstat(dir, &st); err != nil {
		return false, fmt.Errorf("stat %s: %w", dir, err)
	}
	if err := unix.Lstat(filepath.Dir(dir), &parent); err != nil {
		return false, fmt.Errorf("stat parent of %s: %w", dir, err)
	}
	return st.Dev != parent.Dev, nil
}

func (m SysMounter) inMountTable(dir string) (bool, error) {
	path := m.MountInfo
	if path == "" {
		path = "/proc/self/mountinfo"
	}
	f, err := os.Open(path)
	if err != nil {
		return false, fmt.Errorf("read mount table: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() {
		if mp, ok := mountInfoPoint(sc.Text()); ok && mp == dir {
			return true, nil
		}
	}
	if err := sc.Err(); err != nil {
		return false, fmt.Errorf("read mount table: %w", err)
	}
	return false, nil
}

// mountInfoPoint is the mount point (5th field) of a mountinfo line, with
// the kernel's octal escapes (\040 for a space) undone.
func mountInfoPoint(line string) (string, bool) {
	fields := strings.Fields(line)
	if len(fields) < 5 {
		return "", false
	}
	return unescapeOctal(fields[4]), true
}

func unescapeOctal(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
