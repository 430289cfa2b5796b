package podworker

import (
	v1 "k8s.io/api/core/v1"
	criv1 "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodeagent/nodeagent/pkg/podutil"
	"github.com/nodeagent/nodeagent/pkg/probe"
	"github.com/nodeagent/nodeagent/pkg/runtime"
)

// Sidecars are init containers with restartPolicy Always (KEP-753): each
// starts in order with the init containers and must have started before
// the next one runs; they then run beside the app containers, are
// restarted whenever they exit, whatever the pod's restart policy, do not
// decide the pod's phase, and are stopped after the app containers.

// sidecarStarted: running and, with a startup probe, past it.
func sidecarStarted(c *v1.Container, cs *runtime.ContainerStatus, probes ProbeResults) bool {
	if cs == nil || cs.State != criv1.ContainerState_CONTAINER_RUNNING {
		return false
	}
	if c.StartupProbe == nil {
		return true
	}
	if probes == nil {
		return false
	}
	r, ok := probes.Get(probe.Startup, cs.ID)
	return ok && r == probe.Success
}

// planSidecars keeps an initialized pod's sidecars running: a stopped one
// is started again, a changed or failing one is killed and restarted, both
// after their back-off.
func planSidecars(pod *v1.Pod, st *runtime.PodStatus, bo BackoffChecker, probes ProbeResults, p Plan) Plan {
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		if !podutil.IsSidecar(c) {
			continue
		}
		cs := st.Latest(c.Name)
		restart := true
		if cs != nil && cs.State == criv1.ContainerState_CONTAINER_RUNNING {
			k, again, stop := checkRunning(c, cs, true, probes)
			if stop {
				p.ContainersToKill[cs.ID] = k
			}
			restart = stop && again
		}
		if restart && p.backOff(pod, c, lastExited(st, c.Name, p.SandboxID), bo) {
			p.SidecarsToStart = append(p.SidecarsToStart, i)
		}
	}
	return p
}

// sidecarNames are the pod's sidecars, by name.
func sidecarNames(pod *v1.Pod) map[string]bool {
	names := map[string]bool{}
	for i := range pod.Spec.InitContainers {
		if podutil.IsSidecar(&pod.Spec.InitContainers[i]) {
			names[pod.Spec.InitContainers[i].Name] = true
		}
	}
	return names
}
