package stats

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// statBlockSize is the unit of stat's st_blocks.
const statBlockSize = 512

// diskUsage is what the kubelet's MetricsDu measures when it has no
// filesystem quota (pkg/volume/util/fs DiskUsage, `du -x`): the blocks
// allocated to path and everything below it on path's filesystem, a file
// with several hard links counted once, and the number of inodes. Symbolic
// links are not followed (the atomic writer's ..data links count as
// themselves).
func diskUsage(path string) (bytes, inodes uint64, err error) {
	root, err := os.Lstat(path)
	if err != nil {
		return 0, 0, fmt.Errorf("disk usage of %s: %w", path, err)
	}
	rootDev := root.Sys().(*syscall.Stat_t).Dev
	seen := map[uint64]bool{}
	err = filepath.WalkDir(path, func(p string, d fs.DirEntry, werr error) error {
		if werr != nil {
			if errors.Is(werr, fs.ErrNotExist) { // removed while walking
				return nil
			}
			return werr
		}
		info, err := d.Info()
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		st := info.Sys().(*syscall.Stat_t)
		if st.Dev != rootDev {
			// Another filesystem mounted below (du -x).
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.IsDir() && st.Nlink > 1 {
			if seen[st.Ino] {
				return nil
			}
			seen[st.Ino] = true
		}
		bytes += uint64(st.Blocks) * statBlockSize
		inodes++
		return nil
	})
	if err != nil {
		return 0, 0, fmt.Errorf("disk usage of %s: %w", path, err)
	}
	return bytes, inodes, nil
}
