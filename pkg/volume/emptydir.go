package volume

import (
	"context"
	"fmt"
	"os"
	"strings"

	v1 "k8s.io/api/core/v1"
)

const emptyDirPluginName = "kubernetes.io/empty-dir"

// emptyDirPerm is the mode of a disk-backed emptyDir: every user of the
// pod may write there.
const emptyDirPerm = os.FileMode(0o777)

// tmpfsRootPerm is what a memory-backed emptyDir's root gets: the kubelet
// mounts its tmpfs without a mode option, so the root has tmpfs's default
// 01777 (world-writable, sticky); our Mounter mounts 0755, which suits
// secrets but would lock non-root containers out of a writable volume.
const tmpfsRootPerm = os.FileMode(0o777) | os.ModeSticky

// emptyDirPlugin: a directory on the node's disk, or a tmpfs.
type emptyDirPlugin struct{ host Host }

func (p *emptyDirPlugin) Name() string { return emptyDirPluginName }

func (p *emptyDirPlugin) CanSupport(v *v1.Volume) bool { return v.EmptyDir != nil }

// SetUp creates the directory (mounting a tmpfs for medium Memory), gives
// it to the pod's fsGroup and marks it ready; a ready volume is left
// alone, so that what containers did to its root stays.
func (p *emptyDirPlugin) SetUp(_ context.Context, c SetUpContext) (string, error) {
	src := c.Volume.EmptyDir
	if isReady(c.Dir) && p.stillSetUp(src.Medium, c.Dir) {
		return c.Dir, nil
	}
	if err := p.setUpMedium(c); err != nil {
		return "", err
	}
	fsGroup, _ := podFSGroup(c.Pod)
	// The kubelet ignores the change policy for emptyDirs and carries on
	// when the change fails: the pod may still work.
	_ = ownership{fsGroup: fsGroup}.apply(c.Dir)
	if err := setReady(c.Dir); err != nil {
		return "", err
	}
	return c.Dir, nil
}

func (p *emptyDirPlugin) stillSetUp(medium v1.StorageMedium, dir string) bool {
	if _, err := os.Stat(dir); err != nil {
		return false
	}
	if medium != v1.StorageMediumMemory {
		return true
	}
	if p.host.Mounter == nil {
		return false
	}
	mounted, err := p.host.Mounter.IsMountPoint(dir)
	return err == nil && mounted
}

func (p *emptyDirPlugin) setUpMedium(c SetUpContext) error {
	src := c.Volume.EmptyDir
	perm := emptyDirMode(src, emptyDirPerm)
	switch {
	case src.Medium == v1.StorageMediumDefault:
		return setupDir(c.Dir, perm)
	case src.Medium == v1.StorageMediumMemory:
		if err := setupDir(c.Dir, perm); err != nil {
			return err
		}
		size := memoryVolumeSize(c.Pod, src.SizeLimit, p.host.Allocatable)
		if err := mountTmpfs(p.host.Mounter, c.Dir, size); err != nil {
			return err
		}
		return chmodRoot(c.Dir, emptyDirMode(src, tmpfsRootPerm))
	case strings.HasPrefix(string(src.Medium), string(v1.StorageMediumHugePages)):
		return fmt.Errorf("medium %s: hugepages emptyDir volumes are not supported by this node agent", src.Medium)
	default:
		return fmt.Errorf("unknown storage medium %q", src.Medium)
	}
}

// emptyDirMode is the volume's requested mode (emptyDir.mode, alpha),
// else def.
func emptyDirMode(src *v1.EmptyDirVolumeSource, def os.FileMode) os.FileMode {
	if src.Mode == nil {
		return def
	}
	m := os.FileMode(*src.Mode) & os.ModePerm
	if *src.Mode&0o1000 != 0 {
		m |= os.ModeSticky
	}
	return m
}

func chmodRoot(dir string, perm os.FileMode) error {
	if err := os.Chmod(dir, perm); err != nil {
		return fmt.Errorf("set mode of tmpfs root %s: %w", dir, err)
	}
	return nil
}

// TearDown forgets the volume is ready, unmounts a tmpfs and removes the
// directory with whatever the pod left in it.
func (p *emptyDirPlugin) TearDown(dir string) error {
	if err := clearReady(dir); err != nil {
		return err
	}
	return tearDownDir(p.host.Mounter, dir)
}
