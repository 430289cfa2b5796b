package network

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/nodeagent/nodeagent/pkg/atomicfile"
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
	// atomicfile's temporary file is hidden and ends in random digits:
	// the runtime loads only *.conf, *.conflist and *.json, so it never
	// picks up a half-written one.
	if err := atomicfile.Write(path, data, 0o644); err != nil {
		return false, err
	}
	return true, nil
}
