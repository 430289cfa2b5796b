package volume

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	v1 "k8s.io/api/core/v1"
)

// Permission bits the kubelet adds for the pod's fsGroup: group read
// (and write on writable volumes), and search on directories.
const (
	rwMask   = os.FileMode(0o660)
	roMask   = os.FileMode(0o440)
	execMask = os.FileMode(0o110)
)

// ownership is the fsGroup change the kubelet applies to a volume.
type ownership struct {
	fsGroup *int64
	policy  *v1.PodFSGroupChangePolicy
	// readOnly volumes (API data) get group read, writable ones group
	// read-write.
	readOnly bool
}

// podFSGroup reads the pod's fsGroup and change policy.
func podFSGroup(pod *v1.Pod) (*int64, *v1.PodFSGroupChangePolicy) {
	sc := pod.Spec.SecurityContext
	if sc == nil {
		return nil, nil
	}
	return sc.FSGroup, sc.FSGroupChangePolicy
}

// apply gives every file under dir to the fsGroup (owner kept), adds the
// group bits and sets setgid on directories so that files created later
// inherit the group. Nothing happens without an fsGroup, nor with
// OnRootMismatch when the root already looks right.
func (o ownership) apply(dir string) error {
	if o.fsGroup == nil || o.skip(dir) {
		return nil
	}
	return walkDeep(dir, func(path string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return o.change(path, info)
	})
}

// change mirrors the kubelet: a failed chown or chmod of one file does not
// fail the volume (the pod may still work), but a vanished tree does.
func (o ownership) change(path string, info os.FileInfo) error {
	_ = os.Lchown(path, -1, int(*o.fsGroup))
	// chmod follows symlinks: the link's own mode means nothing, and
	// chmod-ing through it would override the target's projected mode.
	if info.Mode()&os.ModeSymlink != 0 {
		return nil
	}
	mask := o.mask()
	if info.IsDir() {
		mask |= os.ModeSetgid | execMask
	}
	_ = os.Chmod(path, info.Mode()|mask)
	return nil
}

func (o ownership) mask() os.FileMode {
	if o.readOnly {
		return roMask
	}
	return rwMask
}

// skip implements OnRootMismatch: the walk is skipped when the root is
// a directory of the fsGroup with setgid and the group bits already set.
func (o ownership) skip(dir string) bool {
	if o.policy == nil || *o.policy != v1.FSGroupChangeOnRootMismatch {
		return false
	}
	info, err := os.Stat(dir)
	if err != nil || !info.IsDir() {
		return false
	}
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok || int64(st.Gid) != *o.fsGroup {
		return false
	}
	want := o.mask() | execMask
	return info.Mode().Perm()&want == want && info.Mode()&os.ModeSetgid != 0
}

// walkDeep visits children before their directory (so a directory's mode
// changes after its content) and does not sort, as the kubelet's walk.
func walkDeep(root string, fn filepath.WalkFunc) error {
	info, err := os.Lstat(root)
	if err != nil {
		return fn(root, nil, err)
	}
	return walkNode(root, info, fn)
}

func walkNode(path string, info os.FileInfo, fn filepath.WalkFunc) error {
	if !info.IsDir() {
		return fn(path, info, nil)
	}
	names, err := readDirNames(path)
	if err != nil {
		return err
	}
	for _, name := range names {
		child := filepath.Join(path, name)
		ci, err := os.Lstat(child)
		if errors.Is(err, os.ErrNotExist) {
			continue // removed while walking
		}
		if err != nil {
			if err := fn(child, nil, err); err != nil {
				return err
			}
			continue
		}
		if err := walkNode(child, ci, fn); err != nil {
			return err
		}
	}
	return fn(path, info, nil)
}

func readDirNames(dir string) ([]string, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", dir, err)
	}
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", dir, err)
	}
	return names, nil
}
