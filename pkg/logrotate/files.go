package logrotate

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// rotatedFiles lists the files next to path named "<path>.<suffix>"
// (rotated, compressed or temporary), sorted oldest first. It matches by
// prefix rather than filepath.Glob so that a path holding glob
// metacharacters cannot widen the match.
func rotatedFiles(path string) ([]string, error) {
	dir, prefix := filepath.Dir(path), filepath.Base(path)+"."
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("list rotated logs: %w", err)
	}
	var out []string
	for _, e := range entries {
		if !e.IsDir() && strings.HasPrefix(e.Name(), prefix) {
			out = append(out, filepath.Join(dir, e.Name()))
		}
	}
	slices.Sort(out) // the timestamp suffix sorts by time
	return out, nil
}

// removeUnused removes what an interrupted compression left behind and
// returns the files still in use.
func removeUnused(files []string) ([]string, error) {
	var inUse []string
	for _, f := range files {
		if isInUse(f, files) {
			inUse = append(inUse, f)
			continue
		}
		if err := os.Remove(f); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("remove unused log: %w", err)
		}
	}
	return inUse, nil
}

// isInUse: temporary files never are; an uncompressed file is not once
// its compressed copy exists (the compression stopped before removing it).
func isInUse(f string, files []string) bool {
	switch {
	case strings.HasSuffix(f, tmpSuffix):
		return false
	case strings.HasSuffix(f, compressSuffix):
		return true
	}
	return !slices.Contains(files, f+compressSuffix)
}

// RemoveLogs removes a container's log file and its rotated files, for
// callers that remove the container (the kubelet's log manager Clean).
// Missing files are not an error.
func RemoveLogs(path string) error {
	rotated, err := rotatedFiles(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil // the directory is gone: so are the files
	}
	if err != nil {
		return err
	}
	var errs []error
	for _, f := range append(rotated, path) {
		if err := os.Remove(f); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("remove container log: %w", err))
		}
	}
	return errors.Join(errs...)
}
