package podworker

import (
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"
	criv1 "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodeagent/nodeagent/pkg/podworker/criconfig"
	"github.com/nodeagent/nodeagent/pkg/runtime"
)

func ephemeralPod() *v1.Pod {
	pod := planBasePod()
	pod.Spec.EphemeralContainers = []v1.EphemeralContainer{
		{EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "debugger", Image: "busybox:1"}, TargetContainerName: "foo1"},
	}
	return pod
}

func TestEphemeralContainersStartOnceInTheRunningPod(t *testing.T) {
	pod := ephemeralPod()
	st := planBaseStatus(pod)
	if p := ComputePodActions(pod, st, nil, nil); !reflect.DeepEqual(p.EphemeralToStart, []int{0}) || len(p.ContainersToStart) > 0 {
		t.Fatalf("plan %s: want the ephemeral container started", p)
	}
	// Once it ran it never starts again, whatever its exit.
	st.Containers = append(st.Containers, &runtime.ContainerStatus{ID: "id-debugger", SandboxID: "sb0", Name: "debugger",
		State: criv1.ContainerState_CONTAINER_EXITED, ExitCode: 1})
	if p := ComputePodActions(pod, st, nil, nil); !p.Empty() {
		t.Fatalf("plan %s: an exited ephemeral container must not restart", p)
	}
	// No sandbox yet: it waits for the pod to run.
	st.Sandboxes = nil
	st.Containers = nil
	if p := ComputePodActions(pod, st, nil, nil); len(p.EphemeralToStart) > 0 {
		t.Fatalf("plan %s: ephemeral containers need the running sandbox", p)
	}
}

func TestEphemeralContainerStatusAndTarget(t *testing.T) {
	pod := ephemeralPod()
	st := planBaseStatus(pod)
	st.Containers = append(st.Containers, &runtime.ContainerStatus{ID: "id-debugger", SandboxID: "sb0", Name: "debugger",
		State: criv1.ContainerState_CONTAINER_RUNNING})
	s := GenerateStatus(StatusInput{Pod: pod, Runtime: st, Now: planFinished})
	if len(s.EphemeralContainerStatuses) != 1 || s.EphemeralContainerStatuses[0].State.Running == nil || s.EphemeralContainerStatuses[0].Ready {
		t.Fatalf("ephemeral statuses %+v: want debugger running, not ready", s.EphemeralContainerStatuses)
	}
	if s.Phase != v1.PodRunning || len(s.ContainerStatuses) != 2 {
		t.Errorf("phase %s, %d container statuses: ephemeral containers do not count", s.Phase, len(s.ContainerStatuses))
	}
	c := ephemeralContainers(pod)[0]
	cfg, err := criconfig.ContainerConfig(pod, &c, criconfig.Node{}, criconfig.ContainerInputs{PidTarget: "id-foo1"})
	if err != nil {
		t.Fatal(err)
	}
	if ns := cfg.Linux.SecurityContext.NamespaceOptions; ns.Pid != criv1.NamespaceMode_TARGET || ns.TargetId != "id-foo1" {
		t.Errorf("namespaces %v: want the target's PID namespace", ns)
	}
}
