package volume

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// readyFile marks a volume whose set-up completed, in the plugin's meta
// directory (not in the volume, where containers would see it).
const readyFile = "ready"

// setupDir creates dir with exactly perm, whatever the umask.
func setupDir(dir string, perm os.FileMode) error {
	if err := os.MkdirAll(dir, perm); err != nil {
		return fmt.Errorf("create volume directory: %w", err)
	}
	info, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("stat volume directory: %w", err)
	}
	if !info.IsDir() {
		return fmt.Errorf("volume path %s is not a directory", dir)
	}
	if info.Mode()&(os.ModePerm|os.ModeSticky|os.ModeSetgid) == perm {
		return nil
	}
	if err := os.Chmod(dir, perm); err != nil {
		return fmt.Errorf("set mode of volume directory: %w", err)
	}
	return nil
}

// mountTmpfs mounts a tmpfs of sizeBytes (0: the kernel's default) on dir
// unless one is already there, so that set-up stays idempotent.
func mountTmpfs(m Mounter, dir string, sizeBytes int64) error {
	if m == nil {
		return errors.New("memory storage requested, but mounter is nil")
	}
	mounted, err := m.IsMountPoint(dir)
	if err != nil {
		return fmt.Errorf("check mount point %s: %w", dir, err)
	}
	if mounted {
		return nil
	}
	if err := m.MountTmpfs(dir, sizeBytes); err != nil {
		return fmt.Errorf("mount tmpfs on %s: %w", dir, err)
	}
	return nil
}

// tearDownDir unmounts dir if something is mounted there and removes it.
// A missing dir is already torn down.
func tearDownDir(m Mounter, dir string) error {
	if _, err := os.Lstat(dir); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if m != nil {
		mounted, err := m.IsMountPoint(dir)
		if err != nil {
			return fmt.Errorf("check mount point %s: %w", dir, err)
		}
		if mounted {
			if err := m.Unmount(dir); err != nil {
				return fmt.Errorf("unmount %s: %w", dir, err)
			}
		}
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("remove volume directory: %w", err)
	}
	return nil
}

// pluginMetaDir is <pod dir>/plugins/<escaped plugin>/<volume> for the
// volume directory <pod dir>/volumes/<escaped plugin>/<volume>: where the
// kubelet keeps a plugin's per-volume state.
func pluginMetaDir(volumeDir string) string {
	name := filepath.Base(volumeDir)
	plugin := filepath.Base(filepath.Dir(volumeDir))
	podDir := filepath.Dir(filepath.Dir(filepath.Dir(volumeDir)))
	return filepath.Join(podDir, "plugins", plugin, name)
}

func isReady(volumeDir string) bool {
	info, err := os.Stat(filepath.Join(pluginMetaDir(volumeDir), readyFile))
	return err == nil && info.Mode().IsRegular()
}

func setReady(volumeDir string) error {
	meta := pluginMetaDir(volumeDir)
	if err := os.MkdirAll(meta, 0o750); err != nil {
		return fmt.Errorf("create volume meta directory: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(meta, readyFile), os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("mark volume ready: %w", err)
	}
	return f.Close()
}

// clearReady removes the volume's meta directory, and the plugin's and the
// pod's plugins directories once empty.
func clearReady(volumeDir string) error {
	meta := pluginMetaDir(volumeDir)
	if err := os.RemoveAll(meta); err != nil {
		return fmt.Errorf("remove volume meta directory: %w", err)
	}
	pluginDir := filepath.Dir(meta)
	if os.Remove(pluginDir) == nil {
		_ = os.Remove(filepath.Dir(pluginDir))
	}
	return nil
}
