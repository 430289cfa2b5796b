package podworker

import (
	"testing"

	"github.com/nodeagent/nodeagent/pkg/runtime"
)

// TestWakeForSkipsWhatTheWorkerSaw: a relist's event wakes the worker
// unless its last runtime read saw exactly the same objects.
func TestWakeForSkipsWhatTheWorkerSaw(t *testing.T) {
	read := runtime.PodObjects{"sb": 0, "c1": 101}
	tests := []struct {
		name  string
		seen  runtime.PodObjects // the worker's last read; nil: none yet
		event runtime.PodObjects
		wake  bool
	}{
		{"never read", nil, runtime.PodObjects{"sb": 0}, true},
		{"what the worker read", read, runtime.PodObjects{"sb": 0, "c1": 101}, false},
		{"a container exited since", read, runtime.PodObjects{"sb": 0, "c1": 102}, true},
		{"a new container", read, runtime.PodObjects{"sb": 0, "c1": 101, "c2": 100}, true},
		{"a container removed", read, runtime.PodObjects{"sb": 0}, true},
		{"an event without objects", read, nil, true},
		{"everything gone, the worker saw nothing", runtime.PodObjects{}, runtime.PodObjects{}, false},
	}
	for _, tt := range tests {
		w := &worker{notify: make(chan struct{}, 1), seen: tt.seen}
		w.wakeFor(runtime.PodEvent{UID: "u", Seen: tt.event})
		if woke := len(w.notify) == 1; woke != tt.wake {
			t.Errorf("%s: woke %t, want %t", tt.name, woke, tt.wake)
		}
	}
}
