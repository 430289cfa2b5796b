package probe

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// statusManager is a manager whose workers are registered by hand (no
// goroutines) and whose results are set directly.
func statusManager(t *testing.T) *Manager {
	t.Helper()
	m, _, _, _ := newTestManager(t, &funcExec{})
	return m
}

func addFakeWorker(m *Manager, uid types.UID, name string, k Kind) *worker {
	w := &worker{m: m, key: workerKey{uid, name, k}, stop: make(chan struct{}), trigger: make(chan struct{}, 1)}
	m.mu.Lock()
	m.workers[w.key] = w
	m.mu.Unlock()
	return w
}

func setResult(m *Manager, k Kind, id string, r Result) {
	m.mu.Lock()
	m.results[resultKey{k, runtimeID(id)}] = r
	m.mu.Unlock()
}

func triggered(w *worker) bool {
	if w == nil {
		return false
	}
	select {
	case <-w.trigger:
		return true
	default:
		return false
	}
}

func TestUpdatePodStatus(t *testing.T) {
	runningState := v1.ContainerState{Running: &v1.ContainerStateRunning{}}
	waiting := v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "ContainerCreating"}}
	terminated := v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 0}}
	res := func(r Result) *Result { return &r }
	for _, tc := range []struct {
		name             string
		state            v1.ContainerState
		startupWorker    bool
		startupResult    *Result
		readinessWorker  bool
		readinessResult  *Result
		wantStarted      bool
		wantReady        bool
		wantTriggerReady bool
	}{
		{name: "no probes, running", state: runningState, wantStarted: true, wantReady: true},
		{name: "no probes, waiting", state: waiting},
		{name: "no probes, terminated", state: terminated},

		{name: "startup worker, no result yet", state: runningState, startupWorker: true},
		{name: "startup unknown", state: runningState, startupWorker: true, startupResult: res(Unknown)},
		{name: "startup failed", state: runningState, startupWorker: true, startupResult: res(Failure)},
		{name: "startup succeeded", state: runningState, startupWorker: true, startupResult: res(Success), wantStarted: true, wantReady: true},
		{name: "startup result outlives its worker", state: runningState, startupResult: res(Failure)},
		{name: "startup succeeded, container not running", state: terminated, startupWorker: true, startupResult: res(Success)},

		{name: "readiness worker, no result yet", state: runningState, readinessWorker: true,
			wantStarted: true, wantTriggerReady: true},
		{name: "readiness failure", state: runningState, readinessWorker: true, readinessResult: res(Failure),
			wantStarted: true, wantTriggerReady: true},
		{name: "readiness success", state: runningState, readinessWorker: true, readinessResult: res(Success),
			wantStarted: true, wantReady: true},
		{name: "readiness success, worker gone", state: runningState, readinessResult: res(Success),
			wantStarted: true, wantReady: true},
		{name: "readiness success, not started", state: runningState, startupWorker: true, startupResult: res(Failure),
			readinessWorker: true, readinessResult: res(Success)},
		{name: "readiness not yet, not started: no trigger", state: runningState, startupWorker: true, readinessWorker: true},
		{name: "readiness success, container waiting", state: waiting, readinessWorker: true, readinessResult: res(Success)},
		{name: "both succeeded", state: runningState, startupWorker: true, startupResult: res(Success),
			readinessWorker: true, readinessResult: res(Success), wantStarted: true, wantReady: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := statusManager(t)
			pod := testPod(v1.Container{Name: "app"})
			if tc.startupWorker {
				addFakeWorker(m, pod.UID, "app", Startup)
			}
			var rw *worker
			if tc.readinessWorker {
				rw = addFakeWorker(m, pod.UID, "app", Readiness)
			}
			if tc.startupResult != nil {
				setResult(m, Startup, cid, *tc.startupResult)
			}
			if tc.readinessResult != nil {
				setResult(m, Readiness, cid, *tc.readinessResult)
			}
			// The pod worker's own guesses are overwritten.
			st := &v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{{
				Name: "app", ContainerID: cid, State: tc.state, Started: ptr(!tc.wantStarted), Ready: !tc.wantReady,
			}}}
			m.UpdatePodStatus(pod, st)
			cs := st.ContainerStatuses[0]
			if cs.Started == nil || *cs.Started != tc.wantStarted {
				t.Errorf("Started = %v, want %v", cs.Started, tc.wantStarted)
			}
			if cs.Ready != tc.wantReady {
				t.Errorf("Ready = %v, want %v", cs.Ready, tc.wantReady)
			}
			if got := triggered(rw); got != tc.wantTriggerReady {
				t.Errorf("readiness triggered = %v, want %v", got, tc.wantTriggerReady)
			}
		})
	}
}

func TestUpdatePodStatusContainersAndSidecars(t *testing.T) {
	m := statusManager(t)
	pod := testPod(v1.Container{Name: "a"}, v1.Container{Name: "b"})
	pod.Spec.InitContainers = []v1.Container{
		{Name: "setup"},
		{Name: "proxy", RestartPolicy: ptr(v1.ContainerRestartPolicyAlways)},
		{Name: "logger", RestartPolicy: ptr(v1.ContainerRestartPolicyAlways)},
	}
	rw := addFakeWorker(m, pod.UID, "b", Readiness)
	addFakeWorker(m, pod.UID, "logger", Startup)
	setResult(m, Readiness, "containerd://b1", Failure)
	runningState := v1.ContainerState{Running: &v1.ContainerStateRunning{}}
	st := &v1.PodStatus{
		ContainerStatuses: []v1.ContainerStatus{
			{Name: "a", ContainerID: "containerd://a1", State: runningState},
			{Name: "b", ContainerID: "containerd://b1", State: runningState},
		},
		InitContainerStatuses: []v1.ContainerStatus{
			// A regular init container is the pod worker's business: untouched.
			{Name: "setup", ContainerID: "containerd://s1", Ready: true,
				State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 0}}},
			{Name: "proxy", ContainerID: "containerd://p1", State: runningState},
			{Name: "logger", ContainerID: "containerd://l1", State: runningState},
		},
	}
	m.UpdatePodStatus(pod, st)
	for _, tc := range []struct {
		cs             v1.ContainerStatus
		started, ready *bool
	}{
		{st.ContainerStatuses[0], ptr(true), ptr(true)},
		{st.ContainerStatuses[1], ptr(true), ptr(false)},
		{st.InitContainerStatuses[0], nil, ptr(true)},
		{st.InitContainerStatuses[1], ptr(true), ptr(true)},
		{st.InitContainerStatuses[2], ptr(false), ptr(false)},
	} {
		if (tc.cs.Started == nil) != (tc.started == nil) || (tc.started != nil && *tc.cs.Started != *tc.started) {
			t.Errorf("%s: Started = %v, want %v", tc.cs.Name, tc.cs.Started, tc.started)
		}
		if tc.cs.Ready != *tc.ready {
			t.Errorf("%s: Ready = %v, want %v", tc.cs.Name, tc.cs.Ready, *tc.ready)
		}
	}
	if !triggered(rw) {
		t.Error("b's readiness probe was not triggered")
	}
}

func TestUpdatePodStatusTriggerDoesNotBlock(t *testing.T) {
	// A trigger already pending is not queued twice, and never blocks.
	m := statusManager(t)
	pod := testPod(v1.Container{Name: "app"})
	rw := addFakeWorker(m, pod.UID, "app", Readiness)
	for i := 0; i < 3; i++ {
		st := &v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{{Name: "app", ContainerID: cid,
			State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}}}}
		m.UpdatePodStatus(pod, st)
	}
	if len(rw.trigger) != 1 {
		t.Errorf("%d triggers pending, want 1", len(rw.trigger))
	}
}
