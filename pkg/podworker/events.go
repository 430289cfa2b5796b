package podworker

import (
	"fmt"
	"log/slog"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	apiruntime "k8s.io/apimachinery/pkg/runtime"

	"github.com/nodeagent/nodeagent/pkg/probe"
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
	pod, container := "", ""
	if ref, ok := obj.(*v1.ObjectReference); ok {
		pod, container = ref.Namespace+"/"+ref.Name, ref.FieldPath
	} else if m, err := meta.Accessor(obj); err == nil {
		pod = m.GetNamespace() + "/" + m.GetName()
	}
	attrs := []any{"pod", pod, "type", eventtype, "reason", reason, "message", fmt.Sprintf(messageFmt, args...)}
	if container != "" {
		attrs = append(attrs, "object", container)
	}
	l.Log.Info("event", attrs...)
}

// containerRef is the object a container's events are about.
func containerRef(pod *v1.Pod, c *v1.Container) *v1.ObjectReference {
	return probe.ContainerRef(pod, c.Name)
}

// containerRefByName is containerRef for a container known by name.
func containerRefByName(pod *v1.Pod, name string) *v1.ObjectReference {
	return probe.ContainerRef(pod, name)
}
