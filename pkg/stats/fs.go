package stats

import (
	"fmt"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// statfs describes the filesystem holding path.
func statfs(path string, now time.Time) (*FsStats, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(path, &st); err != nil {
		return nil, fmt.Errorf("statfs %s: %w", path, err)
	}
	bsize := uint64(st.Bsize)
	return &FsStats{
		Time:           metav1.NewTime(now),
		CapacityBytes:  ptr(st.Blocks * bsize),
		AvailableBytes: ptr(st.Bavail * bsize),
		UsedBytes:      ptr(sub(st.Blocks, st.Bfree) * bsize),
		Inodes:         ptr(st.Files),
		InodesFree:     ptr(st.Ffree),
		InodesUsed:     ptr(sub(st.Files, st.Ffree)),
	}, nil
}
