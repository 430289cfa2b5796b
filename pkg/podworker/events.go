package podworker

import (
	"fmt"
	"log/slog"

	"k8s.io/apimachinery/pkg/api/meta"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
)

// EventRecorder is the subset of client-go's record.EventRecorder the
// workers use, so that an API-backed recorder plugs in unchanged.
type EventRecorder interface {
	Eventf(object apiruntime.Object, eventtype, reason, messageFmt string, args ...interface{})
}

// LogEvents records events as log lines: what a standalone agent, with no
// API server to send them to, can do.
type LogEvents struct{ Log *slog.Logger }

func (l LogEvents) Eventf(obj apiruntime.Object, eventtype, reason, messageFmt string, args ...interface{}) {
	pod := ""
	if m, err := meta.Accessor(obj); err == nil {
		pod = m.GetNamespace() + "/" + m.GetName()
	}
	l.Log.Info("event", "pod", pod, "type", eventtype, "reason", reason, "message", fmt.Sprintf(messageFmt, args...))
}
