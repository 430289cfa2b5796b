package ctrlutil

import (
	"log/slog"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
)

// Events is one controller's event pipeline: a record.EventBroadcaster
// that writes core/v1 events through the API, as each of
// kube-controller-manager's controllers owns one. Create it in New (so
// the recorders exist before any sync), Start it in Run and stop it when
// Run returns; events recorded before Start are dropped.
type Events struct {
	broadcaster record.EventBroadcaster
	client      kubernetes.Interface

	// The broadcaster's Shutdown does not wait for its watchers: stopped
	// keeps the log watcher from logging once stop returned (a test's
	// logger is gone by then).
	mu      sync.RWMutex
	stopped bool
}

// NewEvents returns a pipeline that Start connects to client.
func NewEvents(client kubernetes.Interface) *Events {
	return &Events{broadcaster: record.NewBroadcaster(), client: client}
}

// Recorder records events with the given source component (upstream's
// names: "replicaset-controller", "deployment-controller", ...).
func (e *Events) Recorder(component string) record.EventRecorder {
	return e.broadcaster.NewRecorder(scheme.Scheme, v1.EventSource{Component: component})
}

// Start sends the recorded events to the API server and logs them at
// debug level; stop shuts the broadcaster down (call it when Run returns).
func (e *Events) Start(log *slog.Logger) (stop func()) {
	e.broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: e.client.CoreV1().Events("")})
	e.broadcaster.StartEventWatcher(func(ev *v1.Event) {
		e.mu.RLock()
		defer e.mu.RUnlock()
		if e.stopped {
			return
		}
		obj := ev.InvolvedObject.Name
		if ev.InvolvedObject.Namespace != "" {
			obj = ev.InvolvedObject.Namespace + "/" + obj
		}
		log.Debug("event", "object", ev.InvolvedObject.Kind+" "+obj,
			"type", ev.Type, "reason", ev.Reason, "message", ev.Message)
	})
	return func() {
		e.broadcaster.Shutdown()
		e.mu.Lock()
		e.stopped = true
		e.mu.Unlock()
	}
}
