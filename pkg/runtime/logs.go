package runtime

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"time"

	criv1 "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// The CRI log format: "<RFC3339Nano timestamp> <stream> <tags> <content>",
// one record per line; the tag P marks a partial line continued by the
// next record of the same stream, F a full one.
const (
	// logTimeOut is the fixed-width form timestamps are written in.
	logTimeOut = "2006-01-02T15:04:05.000000000Z07:00"
)

// LogOptions selects what ReadLogs writes: the CRI side of
// v1.PodLogOptions.
type LogOptions struct {
	// TailLines is the number of lines to show from the end; nil shows all.
	// A line written in partial records counts once.
	TailLines *int64
	// LimitBytes stops the output after this many bytes; nil: no limit.
	LimitBytes *int64
	// Since skips lines written before it; zero shows all.
	Since time.Time
	// Follow keeps reading as the container writes, until it stops or ctx
	// ends; it follows the file across a rotation.
	Follow bool
	// Timestamps prefixes each line with its timestamp.
	Timestamps bool
}

// ContainerStatuser tells ReadLogs whether a followed container still
// runs; *Client is one.
type ContainerStatuser interface {
	ContainerStatus(ctx context.Context, id string, verbose bool) (*criv1.ContainerStatusResponse, error)
}

// errLimitReached ends reading once LimitBytes are written.
var errLimitReached = errors.New("log byte limit reached")

// ReadLogs writes the container's CRI-format log file at path to stdout
// and stderr (by record stream; a nil writer drops that stream), joining
// partial records. containerID and rt are used only when following.
func ReadLogs(ctx context.Context, path, containerID string, opts LogOptions, rt ContainerStatuser, stdout, stderr io.Writer) error {
	if opts.Follow && rt == nil {
		return errors.New("following a log needs the runtime to tell when the container stops")
	}
	// fsnotify follows symlinks inconsistently: resolve them first, as the
	// kubelet does.
	resolved, err := filepath.EvalSymlinks(path)
	if err != nil {
		return fmt.Errorf("resolve log path %q: %w", path, err)
	}
	f, err := os.Open(resolved)
	if err != nil {
		return fmt.Errorf("open log file: %w", err)
	}
	lr := &logReader{path: resolved, f: f, out: newLogWriter(opts, stdout, stderr), opts: opts}
	defer func() { lr.f.Close() }()
	if err := lr.seekTail(); err != nil {
		return err
	}
	if opts.Follow {
		lr.follow = &follower{dir: filepath.Dir(resolved), name: filepath.Base(resolved), id: containerID, rt: rt, running: true}
		defer lr.follow.close()
	}
	err = lr.run(ctx)
	if errors.Is(err, errLimitReached) {
		return nil
	}
	return err
}

// logReader reads one log file, switching to its successor on rotation.
type logReader struct {
	path   string
	f      *os.File
	r      *bufio.Reader
	out    *logWriter
	opts   LogOptions
	follow *follower
}

func (lr *logReader) seekTail() error {
	n := int64(-1)
	if lr.opts.TailLines != nil {
		n = *lr.opts.TailLines
	}
	start, err := tailStart(lr.f, n)
	if err != nil {
		return fmt.Errorf("find the last %d lines of %s: %w", n, lr.path, err)
	}
	if _, err := lr.f.Seek(start, io.SeekStart); err != nil {
		return fmt.Errorf("seek in %s: %w", lr.path, err)
	}
	lr.r = bufio.NewReader(lr.f)
	return nil
}

func (lr *logReader) run(ctx context.Context) error {
	// Without follow, stop after TailLines lines even if more are written
	// meanwhile.
	limited := lr.opts.TailLines != nil && !lr.opts.Follow
	for !limited || lr.out.lines < *lr.opts.TailLines {
		line, err := lr.r.ReadBytes('\n')
		switch {
		case err == nil:
		case !errors.Is(err, io.EOF):
			return fmt.Errorf("read %s: %w", lr.path, err)
		case lr.follow == nil:
			// The last record may be incomplete: show what there is.
			return lr.out.writeRecord(line)
		default:
			done, err := lr.atEOF(ctx, len(line))
			if done || err != nil {
				return err
			}
			continue
		}
		if err := lr.out.writeRecord(line); err != nil {
			return err
		}
	}
	return nil
}

// atEOF waits for more to read while following: done reports that the
// container stopped and its log was read to the end.
func (lr *logReader) atEOF(ctx context.Context, incomplete int) (done bool, err error) {
	// Read an incomplete record again once it is complete.
	if _, err := lr.f.Seek(-int64(incomplete), io.SeekCurrent); err != nil {
		return false, fmt.Errorf("seek in %s: %w", lr.path, err)
	}
	lr.r.Reset(lr.f)
	if lr.follow.rotated || lr.replaced() {
		lr.follow.rotated = true
		if handled, err := lr.atRotation(); handled || err != nil {
			return false, err
		}
	}
	if !lr.follow.running {
		return true, nil
	}
	return false, lr.follow.wait(ctx)
}

// atRotation handles the end of a file a new one replaced: handled
// reports that the reader read again or switched, rather than waiting.
// The runtime creates the new file before it stops writing to the old
// one, so the old file is complete only once the new one has data (or
// the container stopped): then one more read of the old file to its end,
// and the switch.
func (lr *logReader) atRotation() (handled bool, err error) {
	next, ok := lr.successor()
	switch {
	case !ok:
		// Renamed and not yet recreated (wait for the Create event), or
		// renamed back (a rotation the runtime refused): reading on from
		// here repeats nothing.
		if _, err := os.Stat(lr.path); err == nil {
			lr.follow.rotated, lr.follow.drained = false, false
		}
		return false, nil
	case lr.follow.drained:
		return true, lr.switchTo(next)
	case next.Size() > 0 || !lr.follow.running:
		lr.follow.drained = true
		return true, nil
	}
	return false, nil
}

func (lr *logReader) switchTo(next os.FileInfo) error {
	lr.follow.rotated, lr.follow.drained = false, false
	f, err := os.Open(lr.path)
	if errors.Is(err, os.ErrNotExist) {
		return nil // renamed again: wait for the next Create event
	}
	if err != nil {
		return fmt.Errorf("reopen log file: %w", err)
	}
	if st, err := f.Stat(); err != nil || !os.SameFile(st, next) {
		// Replaced again since it was judged: judge the newest one.
		f.Close()
		lr.follow.rotated = true
		return nil
	}
	lr.f.Close()
	lr.f = f
	lr.r.Reset(f)
	return nil
}

// replaced reports whether the followed name now holds another file: a
// rotation whose Create event this reader has not taken yet (a wait takes
// one event at a time), so that it never waits on a file no one writes.
func (lr *logReader) replaced() bool {
	_, ok := lr.successor()
	return ok
}

// successor is the file at the followed name when it is not the open one.
func (lr *logReader) successor() (os.FileInfo, bool) {
	cur, err := os.Stat(lr.path)
	if err != nil {
		return nil, false // renamed, not yet recreated
	}
	open, err := lr.f.Stat()
	if err != nil || os.SameFile(open, cur) {
		return nil, false
	}
	return cur, true
}

// logWriter applies the options to records and writes them out.
type logWriter struct {
	opts    LogOptions
	streams map[criv1.LogStreamType]*streamState
	remain  int64
	// lines counts complete lines read (shown or skipped by Since).
	lines int64
}

// streamState tracks a stream's partial line.
type streamState struct {
	w         io.Writer
	midLine   bool // the last record was partial
	skipLine  bool // the current line is older than Since
	hasWriter bool
}

func newLogWriter(opts LogOptions, stdout, stderr io.Writer) *logWriter {
	w := &logWriter{opts: opts, remain: math.MaxInt64, streams: map[criv1.LogStreamType]*streamState{
		criv1.Stdout: {w: stdout, hasWriter: stdout != nil},
		criv1.Stderr: {w: stderr, hasWriter: stderr != nil},
	}}
	if opts.LimitBytes != nil {
		w.remain = *opts.LimitBytes
	}
	return w
}

// writeRecord parses and writes one record; unparsable records are
// skipped, as the kubelet skips them.
func (w *logWriter) writeRecord(line []byte) error {
	if len(line) == 0 {
		return nil
	}
	var rec logRecord
	if err := parseCRIRecord(line, &rec); err != nil {
		return nil
	}
	return w.write(&rec)
}

func (w *logWriter) write(rec *logRecord) error {
	st := w.streams[rec.stream]
	startsLine := !st.midLine
	st.midLine = rec.partial
	if !rec.partial {
		w.lines++
	}
	if startsLine {
		st.skipLine = rec.timestamp.Before(w.opts.Since)
	}
	if st.skipLine || !st.hasWriter {
		return nil
	}
	out := rec.content
	if w.opts.Timestamps && startsLine {
		out = append([]byte(rec.timestamp.Format(logTimeOut)+" "), out...)
	}
	if int64(len(out)) > w.remain {
		out = out[:w.remain]
	}
	n, err := st.w.Write(out)
	w.remain -= int64(n)
	switch {
	case err != nil:
		return err
	case n < len(out):
		return io.ErrShortWrite
	case w.remain <= 0:
		return errLimitReached
	}
	return nil
}

// logRecord is one parsed record.
type logRecord struct {
	timestamp time.Time
	stream    criv1.LogStreamType
	partial   bool
	content   []byte
}

// parseCRIRecord parses "<timestamp> <stream> <tags> <content>". A
// partial record's line feed separates records and is not content.
func parseCRIRecord(line []byte, rec *logRecord) error {
	fields := bytes.SplitN(line, []byte{' '}, 4)
	if len(fields) < 4 {
		return fmt.Errorf("not a CRI log record: %q", line)
	}
	ts, err := time.Parse(time.RFC3339Nano, string(fields[0]))
	if err != nil {
		return fmt.Errorf("log record timestamp: %w", err)
	}
	stream := criv1.LogStreamType(fields[1])
	if stream != criv1.Stdout && stream != criv1.Stderr {
		return fmt.Errorf("log record stream %q", stream)
	}
	rec.timestamp, rec.stream = ts, stream
	rec.partial = isPartialTag(fields[2])
	rec.content = fields[3]
	if rec.partial {
		rec.content = bytes.TrimSuffix(rec.content, []byte{'\n'})
	}
	return nil
}

// isPartialTag reads the first of ":"-separated tags, as the kubelet
// does to stay compatible with tags added later.
func isPartialTag(tags []byte) bool {
	first, _, _ := bytes.Cut(tags, []byte(criv1.LogTagDelimiter))
	return criv1.LogTag(first) == criv1.LogTagPartial
}
