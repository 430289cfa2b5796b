package network

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// WriteAtomic replaces dir/fileName with data (mode 0644) so that a reader
// sees the old file or the new one, never a partial one: the runtime
// reloads CNI configs as soon as the directory changes. Content already in
// place is not rewritten, so as not to wake the runtime for nothing;
// changed says whether the file was written.
func WriteAtomic(dir, fileName string, data []byte) (changed bool, err error) {
	if fileName == "" || fileName != filepath.Base(fileName) || strings.HasPrefix(fileName, ".") {
		return false, fmt.Errorf("write %q: want a plain file name", fileName)
	}
	path := filepath.Join(dir, fileName)
	old, err := os.ReadFile(path)
	switch {
	case err == nil && bytes.Equal(old, data):
		return false, nil
	case err != nil && !errors.Is(err, os.ErrNotExist):
		return false, fmt.Errorf("write %s: %w", path, err)
	}
	// A hidden name ending in random digits: the runtime loads only
	// *.conf, *.conflist and *.json, so it never picks up a half-written
	// temp file.
	f, err := os.CreateTemp(dir, "."+fileName+".tmp-*")
	if err != nil {
		return false, fmt.Errorf("write %s: %w", path, err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			_ = f.Close()
			_ = os.Remove(tmp)
		}
	}()
	if _, err = f.Write(data); err != nil {
		return false, fmt.Errorf("write %s: %w", tmp, err)
	}
	if err = f.Chmod(0o644); err != nil {
		return false, fmt.Errorf("write %s: %w", tmp, err)
	}
	if err = f.Sync(); err != nil {
		return false, fmt.Errorf("write %s: %w", tmp, err)
	}
	if err = f.Close(); err != nil {
		return false, fmt.Errorf("write %s: %w", tmp, err)
	}
	if err = os.Rename(tmp, path); err != nil {
		return false, fmt.Errorf("write %s: %w", path, err)
	}
	// The rename is durable only once the directory is synced.
	if err = syncDir(dir); err != nil {
		return true, fmt.Errorf("write %s: %w", path, err)
	}
	return true, nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
