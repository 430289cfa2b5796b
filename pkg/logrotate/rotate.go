package logrotate

import (
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

const (
	// timestampFormat is the rotated files' suffix (the kubelet's): it
	// sorts by time as a string.
	timestampFormat = "20060102-150405"
	compressSuffix  = ".gz"
	tmpSuffix       = ".tmp"
)

// rotate tidies the rotated files of path, then rotates path itself.
func (m *Manager) rotate(ctx context.Context, id, path string) error {
	rotated, err := rotatedFiles(path)
	if err != nil {
		return err
	}
	rotated, err = removeUnused(rotated)
	if err != nil {
		return err
	}
	rotated, err = removeExcess(rotated, m.cfg.MaxFiles)
	if err != nil {
		return err
	}
	for _, f := range rotated {
		if strings.HasSuffix(f, compressSuffix) {
			continue
		}
		if err := compress(f); err != nil {
			return err
		}
	}
	return m.rotateCurrent(ctx, id, path)
}

// removeExcess removes the oldest of the sorted rotated files so that,
// with the file about to be rotated and the new current one, at most
// maxFiles remain. Oldest first, so that a reader going through them in
// order (as log collectors do) loses as little as possible.
func removeExcess(rotated []string, maxFiles int) ([]string, error) {
	keep := max(maxFiles-2, 0)
	n := max(len(rotated)-keep, 0)
	for _, f := range rotated[:n] {
		if err := os.Remove(f); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("remove old log: %w", err)
		}
	}
	return rotated[n:], nil
}

// compress replaces f by f.gz. It writes f.tmp first, which a later pass
// removes if this one is interrupted; f itself is removed only once f.gz
// is complete.
func compress(f string) (retErr error) {
	in, err := os.Open(f)
	if err != nil {
		return fmt.Errorf("compress log: %w", err)
	}
	defer in.Close()
	info, err := in.Stat()
	if err != nil {
		return fmt.Errorf("compress log: %w", err)
	}
	tmp := f + tmpSuffix
	out, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, info.Mode().Perm())
	if err != nil {
		return fmt.Errorf("compress log: %w", err)
	}
	defer func() {
		if retErr != nil {
			out.Close()
			os.Remove(tmp) // best effort: the next pass removes it otherwise
		}
	}()
	if err := gzipCopy(out, in); err != nil {
		return fmt.Errorf("compress %s: %w", f, err)
	}
	if err := out.Close(); err != nil {
		return fmt.Errorf("compress %s: %w", f, err)
	}
	if err := os.Rename(tmp, f+compressSuffix); err != nil {
		return fmt.Errorf("compress log: %w", err)
	}
	if err := os.Remove(f); err != nil {
		return fmt.Errorf("remove compressed log: %w", err)
	}
	return nil
}

func gzipCopy(dst io.Writer, src io.Reader) error {
	w := gzip.NewWriter(dst)
	if _, err := io.Copy(w, src); err != nil {
		w.Close()
		return err
	}
	return w.Close()
}

// rotateCurrent renames the current log to its timestamped name and has
// the runtime open a new one. The newest rotated file stays uncompressed:
// the runtime may still be finishing a write to it.
func (m *Manager) rotateCurrent(ctx context.Context, id, path string) error {
	rotated := path + "." + m.cfg.Clock.Now().Format(timestampFormat)
	// A second rotation within the same second (or after the clock went
	// back) would overwrite a rotated file: wait for the next pass.
	for _, f := range []string{rotated, rotated + compressSuffix} {
		if _, err := os.Lstat(f); err == nil {
			return fmt.Errorf("rotated log %s already exists; retrying later", f)
		}
	}
	if err := os.Rename(path, rotated); err != nil {
		return fmt.Errorf("rename current log: %w", err)
	}
	if err := m.reopen(ctx, id); err != nil {
		// Put the file back so that the runtime keeps writing to the
		// name readers use, and the next pass retries. Should that fail
		// too, the next pass asks the runtime to reopen (see logSize).
		if rbErr := os.Rename(rotated, path); rbErr != nil {
			return errors.Join(err, fmt.Errorf("roll back the rename: %w", rbErr))
		}
		return err
	}
	return nil
}
