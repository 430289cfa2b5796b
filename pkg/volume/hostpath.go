package volume

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	v1 "k8s.io/api/core/v1"
)

const hostPathPluginName = "kubernetes.io/host-path"

// hostPathPlugin: a path of the node, checked against the volume's type.
type hostPathPlugin struct{}

func (p *hostPathPlugin) Name() string { return hostPathPluginName }

func (p *hostPathPlugin) CanSupport(v *v1.Volume) bool { return v.HostPath != nil }

// SetUp checks (or creates, for the *OrCreate types) the path and returns
// it: containers bind-mount the node's path itself.
func (p *hostPathPlugin) SetUp(_ context.Context, c SetUpContext) (string, error) {
	src := c.Volume.HostPath
	if err := checkHostPath(src.Path, src.Type); err != nil {
		return "", err
	}
	return src.Path, nil
}

// TearDown does nothing: the path belongs to the node.
func (p *hostPathPlugin) TearDown(string) error { return nil }

// checkHostPath validates path against its declared type with the
// kubelet's messages; an unset type checks nothing.
func checkHostPath(path string, typ *v1.HostPathType) error {
	if err := validateNoBacksteps(path); err != nil {
		return fmt.Errorf("invalid HostPath `%s`: %v", path, err)
	}
	if typ == nil || *typ == v1.HostPathUnset {
		return nil
	}
	return checkHostPathType(path, *typ)
}

func checkHostPathType(path string, typ v1.HostPathType) error {
	switch typ {
	case v1.HostPathDirectoryOrCreate:
		if !pathExists(path) {
			return makeHostDir(path)
		}
		return expectType(path, v1.HostPathDirectory, "a directory")
	case v1.HostPathDirectory:
		return expectType(path, v1.HostPathDirectory, "a directory")
	case v1.HostPathFileOrCreate:
		if !pathExists(path) {
			return makeHostFile(path)
		}
		return expectFile(path)
	case v1.HostPathFile:
		return expectFile(path)
	case v1.HostPathSocket:
		return expectType(path, v1.HostPathSocket, "a socket file")
	case v1.HostPathCharDev:
		return expectType(path, v1.HostPathCharDev, "a character device")
	case v1.HostPathBlockDev:
		return expectType(path, v1.HostPathBlockDev, "a block device")
	}
	return fmt.Errorf("%s is an invalid volume type", typ)
}

func expectType(path string, want v1.HostPathType, what string) error {
	if got, err := fileType(path); err != nil || got != want {
		return fmt.Errorf("hostPath type check failed: %s is not %s", path, what)
	}
	return nil
}

// expectFile: as for the kubelet, a "file" is anything that exists and is
// not a directory.
func expectFile(path string) error {
	if !pathExists(path) {
		return fmt.Errorf("hostPath type check failed: %s is not a file", path)
	}
	if t, err := fileType(path); err == nil && t == v1.HostPathDirectory {
		return fmt.Errorf("hostPath type check failed: %s is not a file", path)
	}
	return nil
}

// makeHostDir creates the directory, and its parents, with mode 0755.
func makeHostDir(path string) error {
	if err := os.MkdirAll(path, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("create hostPath directory: %w", err)
	}
	return nil
}

// makeHostFile creates an empty 0644 file; like the kubelet, not its
// parent directory.
func makeHostFile(path string) error {
	f, err := os.OpenFile(path, os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("create hostPath file: %w", err)
	}
	return f.Close()
}

// pathExists follows symlinks: a dangling link does not exist.
func pathExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// fileType is the kind of what path leads to (following symlinks).
func fileType(path string) (v1.HostPathType, error) {
	info, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("path %q does not exist", path)
	}
	if err != nil {
		return "", err
	}
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return "", fmt.Errorf("stat %s: no file mode", path)
	}
	switch st.Mode & syscall.S_IFMT {
	case syscall.S_IFSOCK:
		return v1.HostPathSocket, nil
	case syscall.S_IFBLK:
		return v1.HostPathBlockDev, nil
	case syscall.S_IFCHR:
		return v1.HostPathCharDev, nil
	case syscall.S_IFDIR:
		return v1.HostPathDirectory, nil
	case syscall.S_IFREG:
		return v1.HostPathFile, nil
	}
	return "", errors.New("only recognise file, directory, socket, block device and character device")
}

// validateNoBacksteps rejects ".." elements, as API validation does.
func validateNoBacksteps(p string) error {
	for _, item := range strings.Split(filepath.ToSlash(p), "/") {
		if item == ".." {
			return errors.New("must not contain '..'")
		}
	}
	return nil
}
