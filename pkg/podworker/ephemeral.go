package podworker

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	criv1 "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodeagent/nodeagent/pkg/runtime"
)

// Ephemeral containers (kubectl debug) are added to a running pod through
// the API; the agent starts each once in the pod's sandbox, sharing the
// target container's process namespace when targetContainerName is set,
// reports it in ephemeralContainerStatuses and never restarts it.

// planEphemeral adds the ephemeral containers that never ran to a plan
// that keeps the current sandbox.
func planEphemeral(pod *v1.Pod, st *runtime.PodStatus, p Plan) Plan {
	if p.CreateSandbox || p.KillPod || p.SandboxID == "" {
		return p
	}
	for i := range pod.Spec.EphemeralContainers {
		if st.Latest(pod.Spec.EphemeralContainers[i].Name) == nil {
			p.EphemeralToStart = append(p.EphemeralToStart, i)
		}
	}
	return p
}

// ephemeralContainers are the pod's ephemeral containers as containers.
func ephemeralContainers(pod *v1.Pod) []v1.Container {
	cs := make([]v1.Container, len(pod.Spec.EphemeralContainers))
	for i := range pod.Spec.EphemeralContainers {
		cs[i] = v1.Container(pod.Spec.EphemeralContainers[i].EphemeralContainerCommon)
	}
	return cs
}

// startEphemeral starts the pod's ephemeral containers at the given indexes.
func (w *worker) startEphemeral(ctx context.Context, pod *v1.Pod, idx []int, target startTarget) {
	if len(idx) == 0 {
		return
	}
	list := ephemeralContainers(pod)
	for _, i := range idx {
		t := target
		if name := pod.Spec.EphemeralContainers[i].TargetContainerName; name != "" {
			cs := target.status.Latest(name)
			if cs == nil || cs.State != criv1.ContainerState_CONTAINER_RUNNING {
				msg := fmt.Sprintf("target container %q is not running", name)
				w.setWaiting(list[i].Name, Waiting{"CreateContainerError", msg})
				w.d.events.Eventf(containerRef(pod, &list[i]), v1.EventTypeWarning, "Failed", "Error: %s", msg)
				continue
			}
			t.pidTarget = cs.ID
		}
		w.startContainer(ctx, pod, &list[i], t)
	}
}
