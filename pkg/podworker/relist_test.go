package podworker

import (
	"testing"
	"time"

	"github.com/nodeagent/nodeagent/pkg/runtime"
)

// TestRelistNews: a relist's event wakes a sync unless the worker's last
// runtime read saw as much: it began after the relist listed, or saw the
// same objects.
func TestRelistNews(t *testing.T) {
	read := runtime.PodObjects{"sb": 0, "c1": 101}
	at := time.Date(2026, 12, 2, 5, 0, 0, 0, time.UTC)
	before, after := at.Add(-time.Second), at.Add(time.Second)
	tests := []struct {
		name   string
		seen   runtime.PodObjects // the worker's last read; nil: none to go by
		listed time.Time          // when the relist listed
		event  runtime.PodObjects
		news   bool
	}{
		{"never read", nil, before, runtime.PodObjects{"sb": 0}, true},
		{"read began after the relist listed", read, before, runtime.PodObjects{"sb": 0}, false},
		{"what the worker read, listed after", read, after, runtime.PodObjects{"sb": 0, "c1": 101}, false},
		{"a container exited since", read, after, runtime.PodObjects{"sb": 0, "c1": 102}, true},
		{"a new container", read, after, runtime.PodObjects{"sb": 0, "c1": 101, "c2": 100}, true},
		{"a container removed", read, after, runtime.PodObjects{"sb": 0}, true},
		{"an event without objects or time", read, time.Time{}, nil, true},
		{"everything gone, the worker saw nothing", runtime.PodObjects{}, after, runtime.PodObjects{}, false},
	}
	for _, tt := range tests {
		w := &worker{relisted: make(chan struct{}, 1), relist: relistState{seen: tt.seen, readAt: at}}
		w.wakeFor(runtime.PodEvent{UID: "u", Seen: tt.event, ListedAt: tt.listed})
		if len(w.relisted) != 1 {
			t.Fatalf("%s: the event did not signal the worker", tt.name)
		}
		if got := w.relistNews(); got != tt.news {
			t.Errorf("%s: news %t, want %t", tt.name, got, tt.news)
		}
		if w.relistNews() {
			t.Errorf("%s: the event was judged twice", tt.name)
		}
	}
	// More to do after the read: the next event is news whatever it saw.
	w := &worker{relisted: make(chan struct{}, 1), relist: relistState{seen: read, readAt: at}}
	w.forgetSeen()
	w.wakeFor(runtime.PodEvent{UID: "u", Seen: read, ListedAt: before})
	if !w.relistNews() {
		t.Error("an event after forgetSeen is not news")
	}
}
