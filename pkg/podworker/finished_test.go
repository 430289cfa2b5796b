package podworker

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	criv1 "k8s.io/cri-api/pkg/apis/runtime/v1"
	critest "k8s.io/cri-api/pkg/apis/testing"

	"github.com/nodeagent/nodeagent/pkg/runtime"
)

// Pods the API shows finished (kubernetes issue 105523): after an agent
// restart they must not run again, keep their API status and not count at
// admission; what still runs of them is stopped.

// apiPod is a scenario pod from the API with the given recorded status.
func apiPod(name string, st v1.PodStatus, images ...string) *v1.Pod {
	p := scenarioPod(name, images...)
	p.Annotations = map[string]string{"kubernetes.io/config.source": "api"}
	p.Status = st
	return p
}

// seedRuntime leaves in the runtime what an earlier agent run started for
// pod: a ready sandbox with its first container running.
func seedRuntime(t *testing.T, rt *critest.FakeRuntimeService, pod *v1.Pod) (sandboxID, containerID string) {
	t.Helper()
	ctx := context.Background()
	sbCfg := &criv1.PodSandboxConfig{
		Metadata: &criv1.PodSandboxMetadata{Name: pod.Name, Namespace: pod.Namespace, Uid: string(pod.UID)},
		Labels:   runtime.SandboxLabels(pod),
	}
	sandboxID, err := rt.RunPodSandbox(ctx, sbCfg, "")
	if err != nil {
		t.Fatal(err)
	}
	c := &pod.Spec.Containers[0]
	containerID, err = rt.CreateContainer(ctx, sandboxID, &criv1.ContainerConfig{
		Metadata: &criv1.ContainerMetadata{Name: c.Name}, Image: &criv1.ImageSpec{Image: c.Image},
		Labels: runtime.ContainerLabels(pod, c),
	}, sbCfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.StartContainer(ctx, containerID); err != nil {
		t.Fatal(err)
	}
	rt.Lock()
	rt.Called = nil // only what the agent does from now on counts
	rt.Unlock()
	return sandboxID, containerID
}

// statusLog records the statuses a manager publishes, per pod name.
type statusLog struct {
	mu  sync.Mutex
	got map[string][]v1.PodStatus
}

func (l *statusLog) record(p *v1.Pod, s v1.PodStatus) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.got == nil {
		l.got = map[string][]v1.PodStatus{}
	}
	l.got[p.Name] = append(l.got[p.Name], s)
}

func (l *statusLog) of(name string) []v1.PodStatus {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]v1.PodStatus(nil), l.got[name]...)
}

func waitReady(t *testing.T, h *harness) {
	t.Helper()
	select {
	case <-h.m.Ready():
	case <-time.After(waitFor):
		t.Fatal("first pod set not synced")
	}
}

func TestFinishedAPIPodIsNotStarted(t *testing.T) {
	started := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	tests := []struct {
		name   string
		status v1.PodStatus
	}{
		{name: "succeeded", status: v1.PodStatus{Phase: v1.PodSucceeded, StartTime: &started,
			ContainerStatuses: []v1.ContainerStatus{{Name: "c0", Image: "busybox:1", State: v1.ContainerState{
				Terminated: &v1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed"}}}}}},
		{name: "rejected", status: v1.PodStatus{Phase: v1.PodFailed, Reason: "OutOfcpu",
			Message: "Pod was rejected: Node didn't have enough resource: cpu, requested: 1000, used: 1000, capacity: 1000"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var log statusLog
			h := newManager(t, critest.NewFakeRuntimeService(), critest.NewFakeImageService())
			h.m.cfg.Allocatable = v1.ResourceList{v1.ResourceCPU: resource.MustParse("1")}
			h.m.cfg.OnStatus = log.record
			h.start(t)

			done := apiPod("done", tc.status, "busybox:1")
			done.Spec.RestartPolicy = v1.RestartPolicyAlways // would restart, were it not finished
			done.Spec.Containers[0].Resources.Requests = v1.ResourceList{v1.ResourceCPU: resource.MustParse("1")}
			// A newer pod needing the whole node: the finished one must not count.
			next := apiPod("next", v1.PodStatus{Phase: v1.PodPending}, "busybox:1")
			next.CreationTimestamp = metav1.NewTime(time.Now())
			next.Spec.Containers[0].Resources.Requests = v1.ResourceList{v1.ResourceCPU: resource.MustParse("1")}
			h.pods <- []*v1.Pod{done, next}
			waitReady(t, h)
			eventually(t, "next running", func() (bool, string) { return allRunning(h.pod(next.UID)) })
			h.events <- runtime.PodEvent{UID: done.UID} // a later sync changes nothing either
			h.pods <- []*v1.Pod{done, next}

			if n := count(h.rt.GetCalls(), "RunPodSandbox"); n != 1 {
				t.Errorf("RunPodSandbox called %d times, want 1 (for next only)", n)
			}
			if got := h.pod(done.UID); !apiequality.Semantic.DeepEqual(got.Status, tc.status) {
				t.Errorf("status = %+v, want the API's %+v", got.Status, tc.status)
			}
			if got := log.of("done"); len(got) != 0 {
				t.Errorf("statuses published for the finished pod: %+v", got)
			}
		})
	}
}

// The agent went down while a pod was being stopped: the API shows it
// Failed, its container still runs. It is stopped, never restarted, and
// its phase stays Failed.
func TestFinishedAPIPodStillRunningIsStopped(t *testing.T) {
	var log statusLog
	rt := critest.NewFakeRuntimeService()
	pod := apiPod("stopping", v1.PodStatus{Phase: v1.PodFailed, Reason: "Evicted"}, "busybox:1")
	sandboxID, containerID := seedRuntime(t, rt, pod)
	h := newManager(t, rt, critest.NewFakeImageService())
	h.m.cfg.OnStatus = log.record
	h.start(t)
	h.pods <- []*v1.Pod{pod}

	eventually(t, "pod stopped", func() (bool, string) {
		rt.Lock()
		defer rt.Unlock()
		c, sb := rt.Containers[containerID], rt.Sandboxes[sandboxID]
		return c.State == criv1.ContainerState_CONTAINER_EXITED && sb.State == criv1.PodSandboxState_SANDBOX_NOTREADY,
			fmt.Sprintf("container %s sandbox %s", c.State, sb.State)
	})
	eventually(t, "stopped status", func() (bool, string) {
		p := h.pod(pod.UID)
		if len(p.Status.ContainerStatuses) != 1 {
			return false, fmt.Sprintf("%+v", p.Status)
		}
		return p.Status.ContainerStatuses[0].State.Terminated != nil, fmt.Sprintf("%+v", p.Status.ContainerStatuses[0].State)
	})
	calls := rt.GetCalls()
	for _, c := range []string{"RunPodSandbox", "CreateContainer", "StartContainer"} {
		if n := count(calls, c); n != 0 {
			t.Errorf("%s called %d times: %v", c, n, calls)
		}
	}
	for _, s := range append(log.of("stopping"), h.pod(pod.UID).Status) {
		if s.Phase != v1.PodFailed {
			t.Errorf("phase %s reported; a Failed pod stays Failed", s.Phase)
		}
	}
}

// A pod the API shows Running (the agent restarted while it ran, and its
// containers are gone) is synced as usual.
func TestRunningAPIPodIsSynced(t *testing.T) {
	h := startManager(t)
	pod := apiPod("live", v1.PodStatus{Phase: v1.PodRunning}, "busybox:1")
	h.pods <- []*v1.Pod{pod}
	eventually(t, "pod running", func() (bool, string) {
		p := h.pod(pod.UID)
		if p == nil || len(p.Status.ContainerStatuses) == 0 { // still the API's status
			return false, "not synced"
		}
		return allRunning(p)
	})
	if n := count(h.rt.GetCalls(), "StartContainer"); n != 1 {
		t.Errorf("StartContainer called %d times, want 1", n)
	}
}

// A running pod someone else marks Failed in the API is stopped and not
// restarted, as the kubelet stops pods in a terminal phase.
func TestPodFailedInAPIIsStopped(t *testing.T) {
	h := startManager(t)
	pod := apiPod("marked", v1.PodStatus{Phase: v1.PodPending}, "busybox:1")
	h.pods <- []*v1.Pod{pod}
	eventually(t, "pod running", func() (bool, string) {
		return count(h.rt.GetCalls(), "StartContainer") == 1, "not started"
	})

	failed := pod.DeepCopy()
	failed.Status = v1.PodStatus{Phase: v1.PodFailed, Reason: "Terminated"}
	h.pods <- []*v1.Pod{failed}
	eventually(t, "containers stopped", func() (bool, string) {
		_, cs := h.runtimeObjects()
		return len(cs) == 1 && !strings.HasSuffix(cs[0], "RUNNING"), fmt.Sprint(cs)
	})
	waitPhase(t, h, pod.UID, v1.PodFailed)
	h.events <- runtime.PodEvent{UID: pod.UID}
	h.pods <- []*v1.Pod{failed}
	if n := count(h.rt.GetCalls(), "StartContainer"); n != 1 {
		t.Errorf("StartContainer called %d times, want 1: a failed pod is not restarted", n)
	}
}
