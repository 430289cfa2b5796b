package podworker

import (
	v1 "k8s.io/api/core/v1"
)

// ObjectReferences is told which pods use their config maps and secrets
// (the kubelet's secret and configMap managers' RegisterPod and
// UnregisterPod), so that what Objects reads is watched or cached for
// them rather than asked for on every read.
type ObjectReferences interface {
	RegisterPod(pod *v1.Pod)
	UnregisterPod(pod *v1.Pod)
}

// registerObjects runs on every sync of a pod that is not terminating,
// before anything reads its objects, as in the kubelet's SyncPod: a spec
// change moves the references.
func (w *worker) registerObjects(pod *v1.Pod) {
	if w.d.references != nil {
		w.d.references.RegisterPod(pod)
	}
}

// unregisterObjects runs once the pod is done with its objects (finished,
// or stopped and its volumes gone), as in the kubelet's SyncTerminatedPod.
func (w *worker) unregisterObjects(pod *v1.Pod) {
	if w.d.references != nil {
		w.d.references.UnregisterPod(pod)
	}
}
