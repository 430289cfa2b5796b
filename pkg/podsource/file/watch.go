package file

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"
	v1 "k8s.io/api/core/v1"
)

// loop is the state of one Run: the watcher, whether the directory is
// currently watched, and the debounce of event bursts.
type loop struct {
	s   *Source
	w   *fsnotify.Watcher
	out chan<- []*v1.Pod

	watching   bool
	lastDirErr string // last reason the directory could not be watched

	debounce   *time.Timer
	pending    bool
	firstEvent time.Time
}

func (l *loop) run(ctx context.Context) error {
	resync := time.NewTicker(l.s.resync)
	defer resync.Stop()
	poll := time.NewTicker(dirPollInterval)
	defer poll.Stop()
	l.debounce = time.NewTimer(time.Hour)
	l.debounce.Stop()
	defer l.debounce.Stop()

	l.ensureWatch()
	if !l.sync(ctx, true) {
		return nil
	}
	for {
		var ok bool
		select {
		case <-ctx.Done():
			return nil
		case ev, open := <-l.w.Events:
			if !open {
				return errors.New("staticpod: file watcher closed")
			}
			l.handleEvent(ev)
			ok = true
		case err, open := <-l.w.Errors:
			if !open {
				return errors.New("staticpod: file watcher closed")
			}
			l.s.log.Warn("file watcher error; re-reading the directory", "err", err)
			l.schedule()
			ok = true
		case <-l.debounce.C:
			l.pending = false
			ok = l.sync(ctx, false)
		case <-poll.C:
			ok = true
			if !l.watching && l.ensureWatch() { // the directory appeared
				ok = l.sync(ctx, false)
			}
		case <-resync.C:
			l.ensureWatch()
			ok = l.sync(ctx, false)
		}
		if !ok {
			return nil
		}
	}
}

// ensureWatch starts watching the directory if it is not watched yet and
// reports whether it is watched now. Failures are logged once per reason.
func (l *loop) ensureWatch() bool {
	if l.watching {
		return true
	}
	err := l.addWatch()
	if err != nil {
		if msg := err.Error(); msg != l.lastDirErr {
			l.lastDirErr = msg
			if errors.Is(err, fs.ErrNotExist) {
				l.s.log.Info("manifest directory does not exist yet; polling until it appears", "err", err)
			} else {
				l.s.log.Error("cannot watch manifest directory; retrying", "err", err)
			}
		}
		return false
	}
	l.watching, l.lastDirErr = true, ""
	l.s.log.Info("watching manifest directory")
	return true
}

func (l *loop) addWatch() error {
	info, err := os.Stat(l.s.dir)
	if err != nil {
		return err
	}
	if !info.IsDir() {
		return errors.New("manifest path " + l.s.dir + " is not a directory")
	}
	return l.w.Add(l.s.dir)
}

// handleEvent schedules a re-read for events on direct children of the
// directory and notices the removal of the directory itself. Events on
// hidden entries trigger a re-read too (hidden files are never parsed), so
// that a ConfigMap-style "..data" symlink swap is seen at once.
func (l *loop) handleEvent(ev fsnotify.Event) {
	name := filepath.Clean(ev.Name)
	if name == l.s.dir {
		if ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename) {
			l.s.log.Warn("manifest directory was removed or renamed", "op", ev.Op.String())
			_ = l.w.Remove(l.s.dir) // may already be gone
			l.watching = false
			l.schedule()
		}
		return
	}
	if filepath.Dir(name) != l.s.dir {
		return
	}
	l.s.log.Debug("manifest event", "path", name, "op", ev.Op.String())
	l.schedule()
}

// schedule (re)arms the debounce timer: a re-read happens debounceDelay
// after the last event, but at most maxDebounce after the first one.
func (l *loop) schedule() {
	now := time.Now()
	if !l.pending {
		l.pending, l.firstEvent = true, now
	}
	delay := min(debounceDelay, l.firstEvent.Add(maxDebounce).Sub(now))
	l.debounce.Reset(max(delay, 0))
}

// sync re-reads the directory and sends the snapshot when it changed (or
// always, if force). It returns false if ctx ended while sending.
func (l *loop) sync(ctx context.Context, force bool) bool {
	pods, changed := l.s.rescan()
	if !changed && !force {
		return true
	}
	select {
	case l.out <- pods:
		return true
	case <-ctx.Done():
		return false
	}
}
