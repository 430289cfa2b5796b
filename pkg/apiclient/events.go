package apiclient

import (
	"log/slog"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
)

// EventComponent is the source component of the agent's events, as the
// kubelet's.
const EventComponent = "kubelet"

// NewEventRecorder records core/v1 events to the API with source
// component "kubelet" and host = the node name; stop flushes and ends the
// broadcaster.
func NewEventRecorder(c kubernetes.Interface, nodeName string, log *slog.Logger) (rec record.EventRecorder, stop func()) {
	b := record.NewBroadcaster()
	b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: c.CoreV1().Events("")})
	if log != nil {
		b.StartEventWatcher(func(e *v1.Event) {
			log.Debug("event", "object", e.InvolvedObject.Namespace+"/"+e.InvolvedObject.Name,
				"type", e.Type, "reason", e.Reason, "message", e.Message)
		})
	}
	return b.NewRecorder(scheme.Scheme, v1.EventSource{Component: EventComponent, Host: nodeName}), b.Shutdown
}
