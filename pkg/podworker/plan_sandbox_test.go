package podworker

import (
	"reflect"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	criv1 "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodeagent/nodeagent/pkg/runtime"
)

// newSandboxAfter makes the runtime hold a fresh ready sandbox sb1 in front
// of the given status, whose containers ran in the now dead sb0.
func newSandboxAfter(st *runtime.PodStatus) {
	st.Sandboxes[0].State = criv1.PodSandboxState_SANDBOX_NOTREADY
	st.Sandboxes = append([]*runtime.SandboxStatus{{
		ID: "sb1", Attempt: 1, State: criv1.PodSandboxState_SANDBOX_READY, IPs: []string{"10.0.0.6"},
	}}, st.Sandboxes...)
}

func TestPlanInitContainersRunAgainInANewSandbox(t *testing.T) {
	pod := planBasePod()
	withInit(pod)
	pod.Spec.Containers = pod.Spec.Containers[:1]
	st := planBaseStatus(pod)
	exited(st, "foo1", 137)
	addInit(st, "init1", criv1.ContainerState_CONTAINER_EXITED, 0)
	addInit(st, "init2", criv1.ContainerState_CONTAINER_EXITED, 0)
	newSandboxAfter(st)

	got := viewOf(ComputePodActions(pod, st, nil, nil))
	want := planView{SandboxID: "sb1", InitToStart: 0}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("plan %+v, want %+v (init containers of the old sandbox do not count)", got, want)
	}
	// init1 done in the new sandbox: init2 next, still not the app.
	st.Containers = append([]*runtime.ContainerStatus{{ID: "i1b", SandboxID: "sb1", Name: "init1",
		State: criv1.ContainerState_CONTAINER_EXITED}}, st.Containers...)
	if got := viewOf(ComputePodActions(pod, st, nil, nil)); got.InitToStart != 1 || got.Start != nil {
		t.Errorf("plan %+v, want init2 next", got)
	}
}

func TestPlanSandboxHashChangeRecreatesTheSandbox(t *testing.T) {
	pod := planBasePod()
	st := planBaseStatus(pod)
	st.Sandboxes[0].Hash = runtime.HashSandbox(pod)
	if p := ComputePodActions(pod, st, nil, nil); !p.Empty() {
		t.Fatalf("same pod-level spec: %s", p)
	}
	pod.Spec.HostNetwork = true
	p := ComputePodActions(pod, st, nil, nil)
	if !p.KillPod || !p.CreateSandbox || p.Attempt != 1 {
		t.Errorf("hostNetwork changed: %s, want kill and a new sandbox", p)
	}
	// A container-only change keeps the sandbox.
	pod = planBasePod()
	st.Sandboxes[0].Hash = runtime.HashSandbox(pod)
	pod.Spec.Containers[0].Image = "busybox:2"
	if p := ComputePodActions(pod, st, nil, nil); p.CreateSandbox {
		t.Errorf("image change recreated the sandbox: %s", p)
	}
	// An unknown hash (another agent's sandbox) is left alone.
	st.Sandboxes[0].Hash = ""
	pod.Spec.HostNetwork = true
	if p := ComputePodActions(pod, st, nil, nil); p.CreateSandbox {
		t.Errorf("sandbox without a hash recreated: %s", p)
	}
}

func TestPlanNewSandboxHonoursBackoff(t *testing.T) {
	pod := planBasePod()
	st := planBaseStatus(pod)
	exited(st, "foo1", 1)
	exited(st, "foo2", 1)
	st.Sandboxes[0].State = criv1.PodSandboxState_SANDBOX_NOTREADY
	p := ComputePodActions(pod, st, alwaysBackoff(20*time.Second), nil)
	if !p.CreateSandbox || len(p.ContainersToStart) != 0 || len(p.BackingOff) != 2 {
		t.Errorf("plan %s: want a new sandbox with both containers backing off", p)
	}
}

func TestPhaseOfInitializedPodWithoutInitRecords(t *testing.T) {
	pod := planBasePod()
	withInit(pod)
	st := planBaseStatus(pod) // app containers running, init records garbage-collected
	s := GenerateStatus(StatusInput{Pod: pod, Runtime: st, Now: planFinished})
	if s.Phase != v1.PodRunning {
		t.Errorf("phase %s, want Running", s.Phase)
	}
	for _, c := range s.Conditions {
		if c.Type == v1.PodInitialized && c.Status != v1.ConditionTrue {
			t.Errorf("Initialized %s", c.Status)
		}
	}
}

func TestRecordedGracePeriod(t *testing.T) {
	st := &runtime.PodStatus{Containers: []*runtime.ContainerStatus{{GracePeriod: -1}, {GracePeriod: 300}}}
	if g := recordedGracePeriod(st); g != 300 {
		t.Errorf("grace %d, want 300 from the annotation", g)
	}
	if g := recordedGracePeriod(&runtime.PodStatus{}); g != 30 {
		t.Errorf("grace %d without annotations, want 30", g)
	}
}
