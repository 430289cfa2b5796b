package runtime

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	criv1 "k8s.io/cri-api/pkg/apis/runtime/v1"
)

const (
	// logForceCheckPeriod bounds a wait for a write event: a missed event
	// delays a followed line by at most this much (the kubelet's value),
	// and it is how often the container's state is asked for.
	logForceCheckPeriod = time.Second
	// statusTimeout bounds each ContainerStatus call while following.
	statusTimeout = 10 * time.Second
	// maxWatchErrors is how many watcher errors a follow survives.
	maxWatchErrors = 5
)

// follower waits for a followed log file to grow.
type follower struct {
	dir, name string // the log file's directory and base name
	id        string // the container
	rt        ContainerStatuser
	watcher   *fsnotify.Watcher
	checked   time.Time // the last ContainerStatus call
	errors    int
	// running is false once the container was seen stopped: the file is
	// then read to its end and the follow ends.
	running bool
	// rotated is set when a new file took the followed name: the old one
	// is read to its end before switching.
	rotated bool
	// drained is set once the new file has data: the old one is complete,
	// and the next end of it switches to the new one.
	drained bool
}

// wait returns when the file may have grown or rotated, or the container
// stopped (running turns false).
func (f *follower) wait(ctx context.Context) error {
	if f.watcher == nil {
		if err := f.watch(); err != nil {
			return err
		}
		return nil // read again: a write may have come before the watch
	}
	if time.Since(f.checked) >= logForceCheckPeriod {
		running, err := f.containerRunning(ctx)
		if err != nil {
			return err
		}
		if !running {
			f.running = false
			return nil
		}
	}
	timer := time.NewTimer(logForceCheckPeriod)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case ev, ok := <-f.watcher.Events:
		if !ok {
			return errors.New("log watcher closed")
		}
		if ev.Has(fsnotify.Create) && filepath.Base(ev.Name) == f.name {
			f.rotated = true
		}
	case err := <-f.watcher.Errors:
		if f.errors++; f.errors > maxWatchErrors {
			return fmt.Errorf("watch %s: %w", f.dir, err)
		}
	case <-timer.C:
	}
	return nil
}

// watch watches the directory rather than the file, so that a rotation
// (rename, then a new file) is seen.
func (f *follower) watch() error {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("watch log directory: %w", err)
	}
	if err := w.Add(f.dir); err != nil {
		w.Close()
		return fmt.Errorf("watch log directory %s: %w", f.dir, err)
	}
	f.watcher = w
	return nil
}

// containerRunning asks the runtime. An unavailable runtime counts as
// running (containers outlive their runtime's API, as the kubelet
// assumes); a removed container as stopped.
func (f *follower) containerRunning(ctx context.Context) (bool, error) {
	f.checked = time.Now()
	ctx, cancel := context.WithTimeout(ctx, statusTimeout)
	defer cancel()
	resp, err := f.rt.ContainerStatus(ctx, f.id, false)
	switch {
	case status.Code(err) == codes.Unavailable:
		return true, nil
	case IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("container %s status: %w", f.id, err)
	}
	return resp.GetStatus().GetState() == criv1.ContainerState_CONTAINER_RUNNING, nil
}

func (f *follower) close() {
	if f.watcher != nil {
		f.watcher.Close()
	}
}
