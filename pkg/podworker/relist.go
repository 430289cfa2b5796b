package podworker

import (
	"context"
	"maps"
	"time"

	"github.com/nodeagent/nodeagent/pkg/runtime"
)

// relistState decides whether a relist's event brings a worker news. The
// relist after a pod's start reports the sandbox and containers the start
// itself made and read back; a sync for it would read the runtime again
// to find nothing to do (four CRI calls per pod, and in a burst of starts
// the runtime's CPU is the bottleneck). The kubelet's pod cache spares it
// the same way: a worker's sync waits only for a cache newer than its own
// last one.
type relistState struct {
	seen    runtime.PodObjects // what the last read saw; nil: no read to go by
	readAt  time.Time          // when that read began (the PLEG's clock)
	pending *runtime.PodEvent  // the latest event not yet judged
}

// news: the event saw something the last read did not. An event is old
// news when the read began after the relist had listed, or when both saw
// the same objects; an event without objects or list time is always news.
func (r *relistState) news(ev runtime.PodEvent) bool {
	if r.seen == nil {
		return true
	}
	if !ev.ListedAt.IsZero() && r.readAt.After(ev.ListedAt) {
		return false
	}
	return ev.Seen == nil || !maps.Equal(r.seen, ev.Seen)
}

// readRuntime reads the pod's runtime state and keeps what it saw.
func (w *worker) readRuntime(ctx context.Context, ref runtime.PodRef) (*runtime.PodStatus, error) {
	at := time.Now()
	st, err := runtime.GetPodStatus(ctx, w.d.runtime, ref)
	if err == nil {
		objs := st.Objects()
		w.mu.Lock()
		w.relist.seen, w.relist.readAt = objs, at
		w.mu.Unlock()
	}
	return st, err
}

// forgetSeen makes the next relist event news: the last read showed
// more to do (an init container that finished, a container that exited
// at once), which the sync that event wakes does.
func (w *worker) forgetSeen() {
	w.mu.Lock()
	w.relist.seen = nil
	w.mu.Unlock()
}

// wakeFor hands the worker a relist's event; its loop judges it
// (relistNews) when it next waits, after the sync in progress.
func (w *worker) wakeFor(ev runtime.PodEvent) {
	w.mu.Lock()
	w.relist.pending = &ev
	w.mu.Unlock()
	select {
	case w.relisted <- struct{}{}:
	default:
	}
}

// relistNews judges the pending relist event.
func (w *worker) relistNews() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	ev := w.relist.pending
	w.relist.pending = nil
	return ev != nil && w.relist.news(*ev)
}
