package volume

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// SubPath returns the host path of subPath inside a volume, for a
// volumeMount's subPath. subPath must be relative and free of ".."; a
// missing directory is created (with the mode of the volume's root, as
// the kubelet does, so that the pod can write there), and the result,
// with every symlink resolved, must stay inside the volume: a symlink
// planted by a container cannot make us mount the node's files.
//
// The resolved path is returned, so that a link swapped after this check
// cannot redirect the mount (the kubelet bind-mounts the resolved path
// for the same reason).
func SubPath(volumeHostPath, subPath string) (string, error) {
	if filepath.IsAbs(subPath) {
		return "", fmt.Errorf("error SubPath `%s` must not be an absolute path", subPath)
	}
	if err := validateNoBacksteps(subPath); err != nil {
		return "", fmt.Errorf("unable to provision SubPath `%s`: %v", subPath, err)
	}
	base, err := filepath.EvalSymlinks(volumeHostPath)
	if err != nil {
		return "", fmt.Errorf("resolve volume path: %w", err)
	}
	if err := makeSubPathDirs(base, subPath); err != nil {
		return "", err
	}
	resolved, err := filepath.EvalSymlinks(filepath.Join(base, subPath))
	if err != nil {
		return "", fmt.Errorf("resolve subPath %q: %w", subPath, err)
	}
	if !within(base, resolved) {
		return "", fmt.Errorf("subpath %q not within volume path %q", resolved, base)
	}
	return resolved, nil
}

// makeSubPathDirs walks subPath below base, creating what is missing.
// Existing elements are resolved one at a time and must stay in base, so
// no directory is ever created outside the volume.
func makeSubPathDirs(base, subPath string) error {
	info, err := os.Stat(base)
	if err != nil {
		return fmt.Errorf("stat volume path: %w", err)
	}
	perm := info.Mode() & (os.ModePerm | os.ModeSetgid | os.ModeSticky)
	cur := base
	for _, elem := range strings.Split(filepath.Clean(subPath), string(os.PathSeparator)) {
		if elem == "" || elem == "." {
			continue
		}
		next, err := subPathStep(base, filepath.Join(cur, elem), perm)
		if err != nil {
			return err
		}
		cur = next
	}
	return nil
}

// subPathStep resolves an existing element, or creates it as a directory.
func subPathStep(base, p string, perm os.FileMode) (string, error) {
	_, err := os.Lstat(p)
	if errors.Is(err, os.ErrNotExist) {
		created, err := mkdirSubPath(p, perm)
		if err != nil || created {
			return p, err
		}
		// Created by someone else meanwhile: resolve it like any other.
	} else if err != nil {
		return "", fmt.Errorf("stat subPath element: %w", err)
	}
	resolved, err := filepath.EvalSymlinks(p)
	if errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("subpath %q is a dangling symlink", p)
	}
	if err != nil {
		return "", fmt.Errorf("resolve subPath element: %w", err)
	}
	if !within(base, resolved) {
		return "", fmt.Errorf("subpath %q not within volume path %q", resolved, base)
	}
	return resolved, nil
}

// mkdirSubPath creates p with the volume's mode; false if p appeared
// meanwhile. The mode is set through a descriptor opened without
// following links: a container swapping the new directory for a symlink
// cannot make us chmod a node file.
func mkdirSubPath(p string, perm os.FileMode) (bool, error) {
	err := os.Mkdir(p, perm&os.ModePerm)
	if errors.Is(err, os.ErrExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("create subPath directory: %w", err)
	}
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return false, fmt.Errorf("open subPath directory: %w", err)
	}
	defer f.Close()
	// Mkdir is subject to the umask; the volume's mode is wanted.
	if err := f.Chmod(perm); err != nil {
		return false, fmt.Errorf("set mode of subPath directory: %w", err)
	}
	return true, nil
}

// within tells whether p is base or below it (both resolved).
func within(base, p string) bool {
	if base == string(os.PathSeparator) {
		return true
	}
	return p == base || strings.HasPrefix(p, base+string(os.PathSeparator))
}

// ExpandSubPathExpr expands $(VAR) references of a subPathExpr from the
// container's environment, as the kubelet does: $$ is a literal $, and a
// variable that is undefined or empty is an error.
func ExpandSubPathExpr(expr string, env map[string]string) (string, error) {
	missing := map[string]bool{}
	out := expandVars(expr, func(name string) string {
		v := env[name]
		if v == "" {
			missing[name] = true
		}
		return v
	})
	if len(missing) > 0 {
		return "", fmt.Errorf("missing value for %s", strings.Join(sortedKeys(missing), ", "))
	}
	return out, nil
}
