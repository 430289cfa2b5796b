package podworker

import (
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
)

// networkNotReadyErrorMsg is the kubelet's NetworkNotReadyErrorMsg.
const networkNotReadyErrorMsg = "network is not ready"

// networkRetryPeriod is when a pod that waits for the pod network is
// synced again at the latest (the kubelet's pod worker back-off): the
// manager wakes it as soon as the network is ready (NetworkChanged).
const networkRetryPeriod = 10 * time.Second

// networkNotReadyError is why a pod waits for the pod network.
type networkNotReadyError struct{ err error }

func (e *networkNotReadyError) Error() string {
	return fmt.Sprintf("%s: %v", networkNotReadyErrorMsg, e.err)
}

// waitForNetwork tells whether the pod must wait for the pod network, as
// the kubelet's syncPod does: a pod that is not hostNetwork is not synced
// at all while the network is not ready (no sandbox, no container
// restart), with a NetworkNotReady event; a hostNetwork pod goes on.
func (w *worker) waitForNetwork(pod *v1.Pod) error {
	if w.d.network == nil || pod.Spec.HostNetwork {
		return nil
	}
	err := w.d.network()
	if err == nil {
		return nil
	}
	w.d.events.Eventf(pod, v1.EventTypeWarning, "NetworkNotReady", "%s: %v", networkNotReadyErrorMsg, err)
	return &networkNotReadyError{err}
}

// NetworkChanged wakes every worker, so that the pods that waited for the
// pod network start without waiting for their next retry. Call it when
// Config.Network's answer changes.
func (m *Manager) NetworkChanged() {
	m.mu.Lock()
	workers := make([]*worker, 0, len(m.workers))
	for _, w := range m.workers {
		workers = append(workers, w)
	}
	m.mu.Unlock()
	for _, w := range workers {
		w.wake()
	}
}
