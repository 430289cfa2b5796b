package podworker

import (
	"reflect"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	criv1 "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodeagent/nodeagent/pkg/podutil"
	"github.com/nodeagent/nodeagent/pkg/probe"
	"github.com/nodeagent/nodeagent/pkg/runtime"
)

// sidecarPod: init containers side (a sidecar), then init2 (regular),
// then the base pod's two app containers.
func sidecarPod() *v1.Pod {
	pod := planBasePod()
	always := v1.ContainerRestartPolicyAlways
	pod.Spec.InitContainers = []v1.Container{
		{Name: "side", Image: "busybox:1", RestartPolicy: &always},
		{Name: "init2", Image: "busybox:1"},
	}
	return pod
}

// sidecarStatus is the sandbox with the given init containers' states and
// no app container yet.
func sidecarStatus(pod *v1.Pod, side, init2 criv1.ContainerState) *runtime.PodStatus {
	st := planBaseStatus(pod)
	st.Containers = nil
	for _, c := range []struct {
		name  string
		state criv1.ContainerState
	}{{"side", side}, {"init2", init2}} {
		if c.state == -1 {
			continue
		}
		addInit(st, c.name, c.state, 0)
		st.Containers[len(st.Containers)-1].Hash = runtime.HashContainer(podutil.FindContainer(pod, c.name))
	}
	return st
}

const none = criv1.ContainerState(-1)

func TestSidecarsDuringInit(t *testing.T) {
	running, exited := criv1.ContainerState_CONTAINER_RUNNING, criv1.ContainerState_CONTAINER_EXITED
	for _, tc := range []struct {
		name        string
		side, init2 criv1.ContainerState
		startup     *probe.Result // the sidecar's startup probe result, nil: no startup probe
		backoff     bool
		wantInit    int
		wantBackoff bool
	}{
		{name: "sidecar starts first", side: none, init2: none, wantInit: 0},
		{name: "running sidecar: the next init container starts", side: running, init2: none, wantInit: 1},
		{name: "sidecar not past its startup probe: wait", side: running, init2: none, startup: ptr(probe.Unknown), wantInit: -1},
		{name: "sidecar past its startup probe", side: running, init2: none, startup: ptr(probe.Success), wantInit: 1},
		{name: "exited sidecar restarts even under Never", side: exited, init2: none, wantInit: 0},
		{name: "exited sidecar waits out its back-off", side: exited, init2: none, backoff: true, wantInit: -1, wantBackoff: true},
		{name: "regular init container running: wait", side: running, init2: running, wantInit: -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := sidecarPod()
			pod.Spec.RestartPolicy = v1.RestartPolicyNever
			var probes ProbeResults
			if tc.startup != nil {
				pod.Spec.InitContainers[0].StartupProbe = &v1.Probe{}
				probes = fakeProbes{probe.Startup: {"id-side": *tc.startup}}
			}
			st := sidecarStatus(pod, tc.side, tc.init2)
			var bo BackoffChecker
			if tc.backoff {
				bo = alwaysBackoff(10 * time.Second)
			}
			p := ComputePodActions(pod, st, bo, probes)
			if p.InitToStart != tc.wantInit || p.InitFailed || p.KillPod || len(p.ContainersToStart) > 0 {
				t.Errorf("plan %s: want startInit=%d and nothing else", p, tc.wantInit)
			}
			if _, ok := p.BackingOff["side"]; ok != tc.wantBackoff {
				t.Errorf("plan %s: backing off = %v, want %v", p, ok, tc.wantBackoff)
			}
		})
	}
}

func TestSidecarsAfterInit(t *testing.T) {
	pod := sidecarPod()
	st := sidecarStatus(pod, criv1.ContainerState_CONTAINER_RUNNING, criv1.ContainerState_CONTAINER_EXITED)
	// Init done: the app containers start; the running sidecar is left alone.
	p := ComputePodActions(pod, st, nil, nil)
	if !reflect.DeepEqual(p.ContainersToStart, []int{0, 1}) || len(p.SidecarsToStart) > 0 || p.InitToStart != -1 {
		t.Fatalf("plan %s: want the app containers started", p)
	}
	// Apps running, sidecar exited: it is restarted.
	base := planBaseStatus(pod)
	st.Containers = append(st.Containers, base.Containers...)
	exited(st, "side", 0)
	p = ComputePodActions(pod, st, nil, nil)
	if !reflect.DeepEqual(p.SidecarsToStart, []int{0}) || len(p.ContainersToStart) > 0 || p.KillPod {
		t.Fatalf("plan %s: want the sidecar restarted", p)
	}
	// A failing liveness probe restarts the sidecar.
	setState(st, "side", criv1.ContainerState_CONTAINER_RUNNING)
	p = ComputePodActions(pod, st, nil, fakeProbes{probe.Liveness: {"id-side": probe.Failure}})
	if k := p.ContainersToKill["id-side"]; k.Message != "Container side failed liveness probe, will be restarted" || !reflect.DeepEqual(p.SidecarsToStart, []int{0}) {
		t.Fatalf("plan %s: want the sidecar killed and restarted", p)
	}
}

func TestSidecarsStopWhenAppsComplete(t *testing.T) {
	pod := sidecarPod()
	pod.Spec.RestartPolicy = v1.RestartPolicyNever
	st := sidecarStatus(pod, criv1.ContainerState_CONTAINER_RUNNING, criv1.ContainerState_CONTAINER_EXITED)
	st.Containers = append(st.Containers, planBaseStatus(pod).Containers...)
	exited(st, "foo1", 0)
	exited(st, "foo2", 0)
	p := ComputePodActions(pod, st, nil, nil)
	if !p.KillPod || len(p.SidecarsToStart) > 0 {
		t.Fatalf("plan %s: the apps are done, want the pod (and its sidecar) stopped", p)
	}
	s := GenerateStatus(StatusInput{Pod: pod, Runtime: st, Now: planFinished})
	if s.Phase != v1.PodSucceeded {
		t.Errorf("phase %s, want Succeeded: the running sidecar does not count", s.Phase)
	}
}

func TestSidecarStatus(t *testing.T) {
	pod := sidecarPod()
	st := sidecarStatus(pod, criv1.ContainerState_CONTAINER_RUNNING, none)
	s := GenerateStatus(StatusInput{Pod: pod, Runtime: st, Now: planFinished})
	if s.Phase != v1.PodPending {
		t.Errorf("phase %s while initializing, want Pending", s.Phase)
	}
	if cs := s.InitContainerStatuses[0]; !cs.Ready || cs.Started == nil || !*cs.Started {
		t.Errorf("running sidecar status %+v: want started and ready", cs)
	}
	// Initialized, apps running, the sidecar not ready: the pod is not ready.
	st = sidecarStatus(pod, criv1.ContainerState_CONTAINER_RUNNING, criv1.ContainerState_CONTAINER_EXITED)
	st.Containers = append(st.Containers, planBaseStatus(pod).Containers...)
	s = GenerateStatus(StatusInput{Pod: pod, Runtime: st, Now: planFinished, Probes: func(_ *v1.Pod, s *v1.PodStatus) {
		s.InitContainerStatuses[0].Ready = false
	}})
	if s.Phase != v1.PodRunning {
		t.Errorf("phase %s, want Running", s.Phase)
	}
	for _, c := range s.Conditions {
		switch c.Type {
		case v1.PodInitialized:
			if c.Status != v1.ConditionTrue {
				t.Errorf("Initialized %s", c.Status)
			}
		case v1.PodReady:
			if c.Status != v1.ConditionFalse || c.Message != "containers with unready status: [side]" {
				t.Errorf("Ready %s %q: want False naming the sidecar", c.Status, c.Message)
			}
		}
	}
}

func ptr[T any](v T) *T { return &v }

func setState(st *runtime.PodStatus, name string, state criv1.ContainerState) {
	for _, c := range st.Containers {
		if c.Name == name {
			c.State = state
		}
	}
}
