package runtime

import (
	"bytes"
	"errors"
	"io"
	"os"
)

// tailBlock is how much of the file is read at a time going backwards.
const tailBlock = 4096

// recordHead is enough of a record to hold its timestamp, stream and tags.
const recordHead = 128

// tailStart returns the offset where the last n lines of f begin, a line
// written in partial records counting once; 0 when f holds fewer lines,
// the end of f when n is 0, and 0 when n < 0 (everything).
func tailStart(f *os.File, n int64) (int64, error) {
	if n < 0 {
		return 0, nil
	}
	size, err := f.Seek(0, io.SeekEnd)
	if err != nil || n == 0 {
		return size, err
	}
	b := &backScanner{f: f}
	var count int64
	next := size // where the record after the current one starts
	for cur := size; cur > 0; {
		nl, err := b.lastNewline(cur - 1) // not the record's own line feed
		if err != nil {
			return 0, err
		}
		start := nl + 1
		// The record after this one starts a line unless this one is partial.
		if next < size {
			partial, err := b.partialAt(start)
			if err != nil {
				return 0, err
			}
			if !partial {
				if count++; count == n {
					return next, nil
				}
			}
		}
		next, cur = start, start
	}
	return 0, nil
}

// backScanner finds line feeds going backwards, a block at a time.
type backScanner struct {
	f     *os.File
	block []byte
	off   int64 // offset of block in the file
}

// lastNewline returns the offset of the last '\n' before end, or -1.
func (b *backScanner) lastNewline(end int64) (int64, error) {
	for end > 0 {
		start := (end - 1) / tailBlock * tailBlock
		if err := b.load(start); err != nil {
			return 0, err
		}
		// A file truncated since its size was read holds fewer bytes.
		if i := bytes.LastIndexByte(b.block[:min(end-start, int64(len(b.block)))], '\n'); i >= 0 {
			return start + int64(i), nil
		}
		end = start
	}
	return -1, nil
}

func (b *backScanner) load(off int64) error {
	if b.block != nil && b.off == off {
		return nil
	}
	buf := make([]byte, tailBlock)
	n, err := b.f.ReadAt(buf, off)
	if err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	b.block, b.off = buf[:n], off
	return nil
}

// partialAt reports whether the record at off carries the P tag.
func (b *backScanner) partialAt(off int64) (bool, error) {
	head := make([]byte, recordHead)
	n, err := b.f.ReadAt(head, off)
	if err != nil && !errors.Is(err, io.EOF) {
		return false, err
	}
	fields := bytes.SplitN(head[:n], []byte{' '}, 4)
	return len(fields) == 4 && isPartialTag(fields[2]), nil
}
