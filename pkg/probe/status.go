package probe

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodeagent/nodeagent/pkg/podutil"
)

// UpdatePodStatus sets Started and Ready of the pod's running containers
// (and sidecars) from the cached results, as upstream's prober manager: a
// container is started once its startup probe succeeded (at once without
// one), and ready once started and its readiness probe succeeded (at once
// without one). It then records s as the pod's status (SetPodStatus) and
// triggers the readiness probes that have not reported yet, so that they
// see the container started.
func (m *Manager) UpdatePodStatus(pod *v1.Pod, s *v1.PodStatus) {
	var trigger []*worker
	for i := range s.ContainerStatuses {
		trigger = m.updateContainer(pod.UID, &s.ContainerStatuses[i], trigger)
	}
	for i := range s.InitContainerStatuses {
		if podutil.IsSidecarNamed(pod, s.InitContainerStatuses[i].Name) {
			trigger = m.updateContainer(pod.UID, &s.InitContainerStatuses[i], trigger)
		}
	}
	m.SetPodStatus(pod.UID, s)
	for _, w := range trigger {
		select { // probe now rather than a period later
		case w.trigger <- struct{}{}:
		default:
		}
	}
}

func (m *Manager) updateContainer(uid types.UID, c *v1.ContainerStatus, trigger []*worker) []*worker {
	started := false
	if c.State.Running != nil {
		if r, ok := m.Get(Startup, c.ContainerID); ok {
			started = r == Success
		} else {
			started = !m.hasWorker(uid, c.Name, Startup)
		}
	}
	c.Started = &started
	ready := false
	if started {
		if r, ok := m.Get(Readiness, c.ContainerID); ok && r == Success {
			ready = true
		} else if w := m.worker(uid, c.Name, Readiness); w == nil {
			ready = true
		} else {
			trigger = append(trigger, w)
		}
	}
	c.Ready = ready
	return trigger
}

func (m *Manager) worker(uid types.UID, name string, k Kind) *worker {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.workers[workerKey{uid, name, k}]
}

func (m *Manager) hasWorker(uid types.UID, name string, k Kind) bool {
	return m.worker(uid, name, k) != nil
}
