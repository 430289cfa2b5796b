package volume

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Path limits of a projected file, as the kubelet checks them.
const (
	maxFileNameLength = 255
	maxPathLength     = 4096
)

// Names the writer reserves in its target directory: every name starting
// with ".." is the writer's.
const (
	dataDirName    = "..data"
	newDataDirName = "..data_tmp"
)

// FileProjection is one file of a data volume.
type FileProjection struct {
	Data []byte
	Mode int32
	// FsUser, when set, owns the file (a projected service account token
	// readable by the pod's single non-root user).
	FsUser *int64
}

// AtomicWriter projects a set of files into a directory so that readers
// see either the old set or the new one, never a mix, as the kubelet's
// does: the files live in a hidden timestamped directory, "..data" links
// to it, and each user-visible name links into "..data". An update writes
// a new timestamped directory and renames a new "..data" link over the
// old one, which is atomic.
//
// It is not safe for concurrent use on one directory: the caller (the pod
// worker owning the volume) serialises writes.
type AtomicWriter struct {
	targetDir string
}

// NewAtomicWriter returns a writer for targetDir, which must exist.
func NewAtomicWriter(targetDir string) (*AtomicWriter, error) {
	if _, err := os.Stat(targetDir); err != nil {
		return nil, fmt.Errorf("atomic writer target: %w", err)
	}
	return &AtomicWriter{targetDir: targetDir}, nil
}

// Write makes the target directory hold exactly payload (keys are
// relative paths). Nothing is written when the content is unchanged.
// setPerms, if not nil, runs on the new timestamped directory's name
// before it is published (fsGroup ownership).
func (w *AtomicWriter) Write(payload map[string]FileProjection, setPerms func(tsDirName string) error) error {
	clean, err := validatePayload(payload)
	if err != nil {
		return err
	}
	oldTsDir, err := w.currentTsDir()
	if err != nil {
		return err
	}
	changed, stale, err := w.compare(clean, oldTsDir)
	if err != nil {
		return err
	}
	if changed {
		if err := w.publish(clean, setPerms); err != nil {
			return err
		}
	}
	// Links are (re)made even when nothing changed: a crash between the
	// rename and the links must not leave a key invisible.
	if err := w.createUserVisibleFiles(clean); err != nil {
		return fmt.Errorf("create user-visible links in %s: %w", w.targetDir, err)
	}
	if !changed {
		return nil
	}
	if err := w.removeUserVisiblePaths(stale); err != nil {
		return err
	}
	if oldTsDir == "" {
		return nil
	}
	if err := os.RemoveAll(filepath.Join(w.targetDir, oldTsDir)); err != nil {
		return fmt.Errorf("remove old data directory %s: %w", oldTsDir, err)
	}
	return nil
}

// currentTsDir is the timestamped directory "..data" links to ("" on the
// first write).
func (w *AtomicWriter) currentTsDir() (string, error) {
	old, err := os.Readlink(filepath.Join(w.targetDir, dataDirName))
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read data directory link: %w", err)
	}
	return old, nil
}

// compare tells whether payload differs from what oldTsDir holds, and
// which old paths the new payload drops.
func (w *AtomicWriter) compare(payload map[string]FileProjection, oldTsDir string) (bool, map[string]bool, error) {
	if oldTsDir == "" {
		return true, nil, nil
	}
	oldPath := filepath.Join(w.targetDir, oldTsDir)
	stale, err := pathsToRemove(payload, oldPath)
	if err != nil {
		return false, nil, fmt.Errorf("list old data directory: %w", err)
	}
	differs, err := payloadDiffers(payload, oldPath)
	if err != nil {
		return false, nil, err
	}
	return differs || len(stale) > 0, stale, nil
}

// publish writes payload to a new timestamped directory and swaps
// "..data" to it.
func (w *AtomicWriter) publish(payload map[string]FileProjection, setPerms func(string) error) error {
	tsDir, err := w.newTimestampDir()
	if err != nil {
		return err
	}
	tsName := filepath.Base(tsDir)
	if err := w.fill(tsDir, payload, setPerms); err != nil {
		_ = os.RemoveAll(tsDir)
		return err
	}
	tmpLink := filepath.Join(w.targetDir, newDataDirName)
	_ = os.Remove(tmpLink) // left over by a crash between symlink and rename
	if err := os.Symlink(tsName, tmpLink); err != nil {
		_ = os.RemoveAll(tsDir)
		return fmt.Errorf("create data link for atomic update: %w", err)
	}
	if err := os.Rename(tmpLink, filepath.Join(w.targetDir, dataDirName)); err != nil {
		_ = os.Remove(tmpLink)
		_ = os.RemoveAll(tsDir)
		return fmt.Errorf("rename data link for atomic update: %w", err)
	}
	return nil
}

func (w *AtomicWriter) fill(tsDir string, payload map[string]FileProjection, setPerms func(string) error) error {
	if err := writePayloadToDir(payload, tsDir); err != nil {
		return err
	}
	if setPerms == nil {
		return nil
	}
	if err := setPerms(filepath.Base(tsDir)); err != nil {
		return fmt.Errorf("apply ownership to %s: %w", tsDir, err)
	}
	return nil
}

// newTimestampDir creates "..<UTC timestamp>.<random>" with mode 0755,
// whatever the umask, so that any user in the pod can traverse it.
func (w *AtomicWriter) newTimestampDir() (string, error) {
	dir, err := os.MkdirTemp(w.targetDir, time.Now().UTC().Format("..2006_01_02_15_04_05."))
	if err != nil {
		return "", fmt.Errorf("create timestamped data directory: %w", err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		_ = os.RemoveAll(dir)
		return "", fmt.Errorf("set mode of %s: %w", dir, err)
	}
	return dir, nil
}

// writePayloadToDir writes each file with its exact mode (chmod after the
// write: the umask must not matter) and owner.
func writePayloadToDir(payload map[string]FileProjection, dir string) error {
	for rel, fp := range payload {
		full := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(full), os.ModePerm); err != nil {
			return fmt.Errorf("create directory for %s: %w", rel, err)
		}
		mode := os.FileMode(fp.Mode) & os.ModePerm
		if err := os.WriteFile(full, fp.Data, mode); err != nil {
			return fmt.Errorf("write %s: %w", rel, err)
		}
		if err := os.Chmod(full, mode); err != nil {
			return fmt.Errorf("set mode of %s: %w", rel, err)
		}
		if fp.FsUser != nil {
			if err := os.Chown(full, int(*fp.FsUser), -1); err != nil {
				return fmt.Errorf("set owner of %s: %w", rel, err)
			}
		}
	}
	return nil
}

// createUserVisibleFiles links the first element of every payload path
// into "..data": "a/b/c" is reached through "a -> ..data/a".
func (w *AtomicWriter) createUserVisibleFiles(payload map[string]FileProjection) error {
	for rel := range payload {
		top, _, _ := strings.Cut(rel, string(os.PathSeparator))
		link := filepath.Join(w.targetDir, top)
		if _, err := os.Readlink(link); !errors.Is(err, os.ErrNotExist) {
			continue // already a link, or something the writer does not own
		}
		if err := os.Symlink(filepath.Join(dataDirName, top), link); err != nil {
			return err
		}
	}
	return nil
}

// removeUserVisiblePaths drops the links of paths no longer projected;
// only top-level names are links, deeper ones went with the old data.
func (w *AtomicWriter) removeUserVisiblePaths(paths map[string]bool) error {
	var errs []error
	for p := range paths {
		if strings.Contains(p, string(os.PathSeparator)) {
			continue
		}
		if err := os.Remove(filepath.Join(w.targetDir, p)); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("remove old user-visible path %s: %w", p, err))
		}
	}
	return errors.Join(errs...)
}

// pathsToRemove lists what oldTsDir holds that neither payload's paths
// nor their parent directories cover.
func pathsToRemove(payload map[string]FileProjection, oldTsDir string) (map[string]bool, error) {
	old := map[string]bool{}
	err := filepath.Walk(oldTsDir, func(path string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if rel, _ := filepath.Rel(oldTsDir, path); rel != "." {
			old[rel] = true
		}
		return nil
	})
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	for rel := range payload {
		for p := rel; p != "." && p != string(os.PathSeparator); p = filepath.Dir(p) {
			delete(old, p)
		}
	}
	return old, nil
}

// payloadDiffers compares contents only, as the kubelet does: a mode-only
// change is not rewritten.
func payloadDiffers(payload map[string]FileProjection, oldTsDir string) (bool, error) {
	for rel, fp := range payload {
		cur, err := os.ReadFile(filepath.Join(oldTsDir, rel))
		if errors.Is(err, os.ErrNotExist) {
			return true, nil
		}
		if err != nil {
			return false, fmt.Errorf("read current %s: %w", rel, err)
		}
		if !bytes.Equal(cur, fp.Data) {
			return true, nil
		}
	}
	return false, nil
}

// validatePayload checks every path and returns the payload keyed by
// cleaned paths.
func validatePayload(payload map[string]FileProjection) (map[string]FileProjection, error) {
	clean := make(map[string]FileProjection, len(payload))
	for p, fp := range payload {
		if err := validatePath(p); err != nil {
			return nil, err
		}
		clean[filepath.Clean(p)] = fp
	}
	return clean, nil
}

// validatePath rejects what could escape the volume or collide with the
// writer's own names, with the kubelet's messages.
func validatePath(p string) error {
	if p == "" {
		return fmt.Errorf("invalid path: must not be empty: %q", p)
	}
	if filepath.IsAbs(p) {
		return fmt.Errorf("invalid path: must be relative path: %s", p)
	}
	if len(p) > maxPathLength {
		return fmt.Errorf("invalid path: must be less than or equal to %d characters", maxPathLength)
	}
	items := strings.Split(p, string(os.PathSeparator))
	for _, item := range items {
		if item == ".." {
			return fmt.Errorf("invalid path: must not contain '..': %s", p)
		}
		if len(item) > maxFileNameLength {
			return fmt.Errorf("invalid path: filenames must be less than or equal to %d characters", maxFileNameLength)
		}
	}
	if strings.HasPrefix(items[0], "..") && len(items[0]) > 2 {
		return fmt.Errorf("invalid path: must not start with '..': %s", p)
	}
	return nil
}
