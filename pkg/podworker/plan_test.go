package podworker

import (
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	criv1 "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodeagent/nodeagent/pkg/probe"
	"github.com/nodeagent/nodeagent/pkg/runtime"
)

// fakeBackoff is a function-field fake of BackoffChecker.
type fakeBackoff struct {
	IsInBackOffSinceF func(id string, eventTime time.Time) bool
	GetF              func(id string) time.Duration
}

func (f fakeBackoff) IsInBackOffSince(id string, t time.Time) bool { return f.IsInBackOffSinceF(id, t) }
func (f fakeBackoff) Get(id string) time.Duration                  { return f.GetF(id) }

// alwaysBackoff reports every restart as still backing off for d.
func alwaysBackoff(d time.Duration) fakeBackoff {
	return fakeBackoff{
		IsInBackOffSinceF: func(string, time.Time) bool { return true },
		GetF:              func(string) time.Duration { return d },
	}
}

var planFinished = time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)

// planBasePod has two app containers and restartPolicy Always.
func planBasePod() *v1.Pod {
	pod := &v1.Pod{}
	pod.Name, pod.Namespace, pod.UID = "foo", "new", "12345678"
	pod.Spec.RestartPolicy = v1.RestartPolicyAlways
	pod.Spec.Containers = []v1.Container{
		{Name: "foo1", Image: "busybox:1"},
		{Name: "foo2", Image: "alpine:3"},
	}
	return pod
}

// planBaseStatus is one ready sandbox with an IP and both containers
// running with matching hashes.
func planBaseStatus(pod *v1.Pod) *runtime.PodStatus {
	st := &runtime.PodStatus{
		Ref: runtime.PodRef{UID: pod.UID, Name: pod.Name, Namespace: pod.Namespace},
		Sandboxes: []*runtime.SandboxStatus{{
			ID: "sb0", State: criv1.PodSandboxState_SANDBOX_READY, IPs: []string{"10.0.0.5"},
		}},
	}
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		st.Containers = append(st.Containers, &runtime.ContainerStatus{
			ID: "id-" + c.Name, SandboxID: "sb0", Name: c.Name,
			Hash: runtime.HashContainer(c), State: criv1.ContainerState_CONTAINER_RUNNING,
		})
	}
	return st
}

func withInit(pod *v1.Pod) {
	pod.Spec.InitContainers = []v1.Container{{Name: "init1", Image: "busybox:1"}, {Name: "init2", Image: "busybox:1"}}
}

func exited(st *runtime.PodStatus, name string, code int32) {
	for _, c := range st.Containers {
		if c.Name == name {
			c.State, c.ExitCode, c.FinishedAt = criv1.ContainerState_CONTAINER_EXITED, code, planFinished
		}
	}
}

func addInit(st *runtime.PodStatus, name string, state criv1.ContainerState, code int32) {
	st.Containers = append(st.Containers, &runtime.ContainerStatus{
		ID: "id-" + name, SandboxID: "sb0", Name: name,
		State: state, ExitCode: code, FinishedAt: planFinished,
	})
}

// planView is the comparable form of a Plan: kills as ID -> container name,
// back-offs as sorted names, empty collections as nil.
type planView struct {
	KillPod, CreateSandbox, InitFailed bool
	Attempt                            uint32
	SandboxID                          string
	InitToStart                        int
	Start                              []int
	Kill                               map[string]string
	BackingOff                         []string
}

func viewOf(p Plan) planView {
	v := planView{KillPod: p.KillPod, CreateSandbox: p.CreateSandbox, InitFailed: p.InitFailed,
		Attempt: p.Attempt, SandboxID: p.SandboxID, InitToStart: p.InitToStart}
	if len(p.ContainersToStart) > 0 {
		v.Start = p.ContainersToStart
	}
	for id, k := range p.ContainersToKill {
		if v.Kill == nil {
			v.Kill = map[string]string{}
		}
		v.Kill[id] = k.Name
	}
	for name := range p.BackingOff {
		v.BackingOff = append(v.BackingOff, name)
	}
	sort.Strings(v.BackingOff)
	return v
}

func TestComputePodActions(t *testing.T) {
	noop := planView{SandboxID: "sb0", InitToStart: -1}
	cases := []struct {
		name    string
		pod     func(*v1.Pod)
		status  func(*runtime.PodStatus)
		backoff BackoffChecker
		want    planView
	}{
		{name: "all running: nothing to do", want: noop},
		{
			name:   "no sandbox: create one and start everything",
			status: func(s *runtime.PodStatus) { s.Sandboxes, s.Containers = nil, nil },
			want:   planView{KillPod: true, CreateSandbox: true, InitToStart: -1, Start: []int{0, 1}},
		},
		{
			name: "sandbox not ready: kill and recreate with the next attempt",
			status: func(s *runtime.PodStatus) {
				s.Sandboxes[0].State, s.Sandboxes[0].Attempt = criv1.PodSandboxState_SANDBOX_NOTREADY, 2
			},
			want: planView{KillPod: true, CreateSandbox: true, Attempt: 3, InitToStart: -1, Start: []int{0, 1}},
		},
		{
			name: "two ready sandboxes: reconcile with a new one",
			status: func(s *runtime.PodStatus) {
				newer := &runtime.SandboxStatus{ID: "sb1", Attempt: 1, State: criv1.PodSandboxState_SANDBOX_READY, IPs: []string{"10.0.0.6"}}
				s.Sandboxes = append([]*runtime.SandboxStatus{newer}, s.Sandboxes...)
			},
			want: planView{KillPod: true, CreateSandbox: true, Attempt: 2, InitToStart: -1, Start: []int{0, 1}},
		},
		{
			name:   "sandbox without an IP: network lost, recreate",
			status: func(s *runtime.PodStatus) { s.Sandboxes[0].IPs = nil },
			want:   planView{KillPod: true, CreateSandbox: true, Attempt: 1, InitToStart: -1, Start: []int{0, 1}},
		},
		{
			name:   "hostNetwork sandbox needs no IP",
			pod:    func(p *v1.Pod) { p.Spec.HostNetwork = true },
			status: func(s *runtime.PodStatus) { s.Sandboxes[0].IPs, s.Sandboxes[0].HostNet = nil, true },
			want:   noop,
		},
		{
			name:   "Always: exited container restarts",
			status: func(s *runtime.PodStatus) { exited(s, "foo1", 0) },
			want:   planView{SandboxID: "sb0", InitToStart: -1, Start: []int{0}},
		},
		{
			name:   "OnFailure: exit 0 is not restarted",
			pod:    func(p *v1.Pod) { p.Spec.RestartPolicy = v1.RestartPolicyOnFailure },
			status: func(s *runtime.PodStatus) { exited(s, "foo1", 0) },
			want:   noop,
		},
		{
			name:   "OnFailure: non-zero exit restarts",
			pod:    func(p *v1.Pod) { p.Spec.RestartPolicy = v1.RestartPolicyOnFailure },
			status: func(s *runtime.PodStatus) { exited(s, "foo2", 1) },
			want:   planView{SandboxID: "sb0", InitToStart: -1, Start: []int{1}},
		},
		{
			name:   "Never: exited container stays down",
			pod:    func(p *v1.Pod) { p.Spec.RestartPolicy = v1.RestartPolicyNever },
			status: func(s *runtime.PodStatus) { exited(s, "foo1", 1) },
			want:   noop,
		},
		{
			name:   "Never: all exited kills the pod",
			pod:    func(p *v1.Pod) { p.Spec.RestartPolicy = v1.RestartPolicyNever },
			status: func(s *runtime.PodStatus) { exited(s, "foo1", 0); exited(s, "foo2", 1) },
			want:   planView{KillPod: true, SandboxID: "sb0", InitToStart: -1},
		},
		{
			name:   "OnFailure: all succeeded kills the pod",
			pod:    func(p *v1.Pod) { p.Spec.RestartPolicy = v1.RestartPolicyOnFailure },
			status: func(s *runtime.PodStatus) { exited(s, "foo1", 0); exited(s, "foo2", 0) },
			want:   planView{KillPod: true, SandboxID: "sb0", InitToStart: -1},
		},
		{
			name:   "container spec changed: kill and start it",
			status: func(s *runtime.PodStatus) { s.Containers[0].Hash = "stale" },
			want:   planView{SandboxID: "sb0", InitToStart: -1, Start: []int{0}, Kill: map[string]string{"id-foo1": "foo1"}},
		},
		{
			name:   "unknown state: kill before starting again",
			status: func(s *runtime.PodStatus) { s.Containers[1].State = criv1.ContainerState_CONTAINER_UNKNOWN },
			want:   planView{SandboxID: "sb0", InitToStart: -1, Start: []int{1}, Kill: map[string]string{"id-foo2": "foo2"}},
		},
		{
			name:   "created but never started: start it",
			status: func(s *runtime.PodStatus) { s.Containers[0].State = criv1.ContainerState_CONTAINER_CREATED },
			want:   planView{SandboxID: "sb0", InitToStart: -1, Start: []int{0}},
		},
		{
			name:   "container missing from the runtime: start it",
			status: func(s *runtime.PodStatus) { s.Containers = s.Containers[:1] },
			want:   planView{SandboxID: "sb0", InitToStart: -1, Start: []int{1}},
		},
		{
			name:   "init: none run yet, start the first",
			pod:    withInit,
			status: func(s *runtime.PodStatus) { s.Containers = nil },
			want:   planView{SandboxID: "sb0", InitToStart: 0},
		},
		{
			name: "init: first running, wait",
			pod:  withInit,
			status: func(s *runtime.PodStatus) {
				s.Containers = nil
				addInit(s, "init1", criv1.ContainerState_CONTAINER_RUNNING, 0)
			},
			want: noop,
		},
		{
			name: "init: first succeeded, start the second",
			pod:  withInit,
			status: func(s *runtime.PodStatus) {
				s.Containers = nil
				addInit(s, "init1", criv1.ContainerState_CONTAINER_EXITED, 0)
			},
			want: planView{SandboxID: "sb0", InitToStart: 1},
		},
		{
			name: "init: all succeeded, start the app containers",
			pod:  withInit,
			status: func(s *runtime.PodStatus) {
				s.Containers = nil
				addInit(s, "init2", criv1.ContainerState_CONTAINER_EXITED, 0)
				addInit(s, "init1", criv1.ContainerState_CONTAINER_EXITED, 0)
			},
			want: planView{SandboxID: "sb0", InitToStart: -1, Start: []int{0, 1}},
		},
		{
			name: "init: failed under Never, the pod fails",
			pod:  func(p *v1.Pod) { withInit(p); p.Spec.RestartPolicy = v1.RestartPolicyNever },
			status: func(s *runtime.PodStatus) {
				s.Containers = nil
				addInit(s, "init1", criv1.ContainerState_CONTAINER_EXITED, 1)
			},
			want: planView{KillPod: true, InitFailed: true, SandboxID: "sb0", InitToStart: -1},
		},
		{
			name: "init: failed under Always, restart it",
			pod:  withInit,
			status: func(s *runtime.PodStatus) {
				s.Containers = nil
				addInit(s, "init1", criv1.ContainerState_CONTAINER_EXITED, 0)
				addInit(s, "init2", criv1.ContainerState_CONTAINER_EXITED, 1)
			},
			want: planView{SandboxID: "sb0", InitToStart: 1},
		},
		{
			name: "init: failed under Always while backing off",
			pod:  withInit,
			status: func(s *runtime.PodStatus) {
				s.Containers = nil
				addInit(s, "init1", criv1.ContainerState_CONTAINER_EXITED, 1)
			},
			backoff: alwaysBackoff(20 * time.Second),
			want:    planView{SandboxID: "sb0", InitToStart: -1, BackingOff: []string{"init1"}},
		},
		{
			name: "init records garbage-collected while app containers exist: init is done",
			pod:  withInit,
			want: noop,
		},
		{
			name: "sandbox dead, Never, containers already ran: kill only, no new sandbox",
			pod:  func(p *v1.Pod) { p.Spec.RestartPolicy = v1.RestartPolicyNever },
			status: func(s *runtime.PodStatus) {
				s.Sandboxes[0].State = criv1.PodSandboxState_SANDBOX_NOTREADY
				exited(s, "foo1", 0)
				exited(s, "foo2", 0)
			},
			want: planView{KillPod: true, InitToStart: -1},
		},
		{
			name: "sandbox dead, Never, no container ever created: retry the sandbox",
			pod:  func(p *v1.Pod) { p.Spec.RestartPolicy = v1.RestartPolicyNever },
			status: func(s *runtime.PodStatus) {
				s.Sandboxes[0].State, s.Containers = criv1.PodSandboxState_SANDBOX_NOTREADY, nil
			},
			want: planView{KillPod: true, CreateSandbox: true, Attempt: 1, InitToStart: -1, Start: []int{0, 1}},
		},
		{
			name: "sandbox dead, OnFailure: succeeded containers are not restarted",
			pod:  func(p *v1.Pod) { p.Spec.RestartPolicy = v1.RestartPolicyOnFailure },
			status: func(s *runtime.PodStatus) {
				s.Sandboxes[0].State = criv1.PodSandboxState_SANDBOX_NOTREADY
				exited(s, "foo1", 0)
				exited(s, "foo2", 1)
			},
			want: planView{KillPod: true, CreateSandbox: true, Attempt: 1, InitToStart: -1, Start: []int{1}},
		},
		{
			name: "sandbox dead, OnFailure, all succeeded: nothing to start, no sandbox",
			pod:  func(p *v1.Pod) { p.Spec.RestartPolicy = v1.RestartPolicyOnFailure },
			status: func(s *runtime.PodStatus) {
				s.Sandboxes[0].State = criv1.PodSandboxState_SANDBOX_NOTREADY
				exited(s, "foo1", 0)
				exited(s, "foo2", 0)
			},
			want: planView{KillPod: true, InitToStart: -1},
		},
		{
			name: "sandbox dead, OnFailure, all succeeded, with init containers: no sandbox, no init rerun",
			pod:  func(p *v1.Pod) { withInit(p); p.Spec.RestartPolicy = v1.RestartPolicyOnFailure },
			status: func(s *runtime.PodStatus) {
				s.Sandboxes[0].State = criv1.PodSandboxState_SANDBOX_NOTREADY
				exited(s, "foo1", 0)
				exited(s, "foo2", 0)
				addInit(s, "init1", criv1.ContainerState_CONTAINER_EXITED, 0)
				addInit(s, "init2", criv1.ContainerState_CONTAINER_EXITED, 0)
			},
			want: planView{KillPod: true, InitToStart: -1},
		},
		{
			name:   "sandbox dead with init containers: restart from the first init container",
			pod:    withInit,
			status: func(s *runtime.PodStatus) { s.Sandboxes[0].State = criv1.PodSandboxState_SANDBOX_NOTREADY },
			want:   planView{KillPod: true, CreateSandbox: true, Attempt: 1, InitToStart: 0},
		},
		{
			name:    "back-off: exited container waits, the other keeps running",
			status:  func(s *runtime.PodStatus) { exited(s, "foo1", 1) },
			backoff: alwaysBackoff(40 * time.Second),
			want:    planView{SandboxID: "sb0", InitToStart: -1, BackingOff: []string{"foo1"}},
		},
		{
			name:    "back-off: every container waiting does not kill the pod",
			status:  func(s *runtime.PodStatus) { exited(s, "foo1", 1); exited(s, "foo2", 2) },
			backoff: alwaysBackoff(10 * time.Second),
			want:    planView{SandboxID: "sb0", InitToStart: -1, BackingOff: []string{"foo1", "foo2"}},
		},
		{
			name:   "back-off over: restart",
			status: func(s *runtime.PodStatus) { exited(s, "foo1", 1) },
			backoff: fakeBackoff{
				IsInBackOffSinceF: func(string, time.Time) bool { return false },
				GetF:              func(string) time.Duration { return 0 },
			},
			want: planView{SandboxID: "sb0", InitToStart: -1, Start: []int{0}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			plan := planOn(tc.pod, tc.status, tc.backoff, nil)
			checkView(t, plan, tc.want)
		})
	}
}

// planOn plans for the base pod and status changed by podFn and stFn
// (either may be nil).
func planOn(podFn func(*v1.Pod), stFn func(*runtime.PodStatus), bo BackoffChecker, probes ProbeResults) Plan {
	pod := planBasePod()
	if podFn != nil {
		podFn(pod)
	}
	st := planBaseStatus(pod)
	if stFn != nil {
		stFn(st)
	}
	return ComputePodActions(pod, st, bo, probes)
}

func checkView(t *testing.T, plan Plan, want planView) {
	t.Helper()
	if got := viewOf(plan); !reflect.DeepEqual(got, want) {
		t.Errorf("plan mismatch\n got: %+v\nwant: %+v\n(%s)", got, want, plan)
	}
}

func TestComputePodActionsKillMessage(t *testing.T) {
	pod := planBasePod()
	st := planBaseStatus(pod)
	st.Containers[0].Hash = "stale"
	plan := ComputePodActions(pod, st, nil, nil)
	if got, want := plan.ContainersToKill["id-foo1"].Message, "Container foo1 definition changed, will be restarted"; got != want {
		t.Errorf("kill message = %q, want %q", got, want)
	}
}

func TestComputePodActionsBackoffQuery(t *testing.T) {
	pod := planBasePod()
	st := planBaseStatus(pod)
	exited(st, "foo2", 1)
	var gotKey string
	var gotTime time.Time
	bo := fakeBackoff{
		IsInBackOffSinceF: func(id string, t time.Time) bool { gotKey, gotTime = id, t; return true },
		GetF:              func(string) time.Duration { return 80 * time.Second },
	}
	plan := ComputePodActions(pod, st, bo, nil)
	wantKey := "foo_new_12345678_foo2_" + runtime.HashContainer(&pod.Spec.Containers[1])
	if gotKey != wantKey || !gotTime.Equal(planFinished) {
		t.Errorf("back-off asked for (%q, %v), want (%q, %v)", gotKey, gotTime, wantKey, planFinished)
	}
	if d := plan.BackingOff["foo2"]; d != 80*time.Second {
		t.Errorf("BackingOff[foo2] = %v, want 80s", d)
	}
	// A changed spec gets a fresh back-off key.
	pod.Spec.Containers[1].Image = "alpine:4"
	ComputePodActions(pod, st, bo, nil)
	if gotKey == wantKey {
		t.Errorf("back-off key did not change with the container spec: %q", gotKey)
	}
}

func TestComputePodActionsIsPure(t *testing.T) {
	pod := planBasePod()
	st := planBaseStatus(pod)
	exited(st, "foo1", 1)
	podBefore, stBefore := pod.DeepCopy(), *st.Containers[0]
	first := ComputePodActions(pod, st, nil, nil)
	second := ComputePodActions(pod, st, nil, nil)
	if !reflect.DeepEqual(first, second) {
		t.Errorf("two calls differ: %v vs %v", first, second)
	}
	if !reflect.DeepEqual(pod, podBefore) || !reflect.DeepEqual(*st.Containers[0], stBefore) {
		t.Error("ComputePodActions modified its inputs")
	}
}

func TestPlanString(t *testing.T) {
	cases := []struct {
		name string
		plan Plan
		want string
	}{
		{"nothing", Plan{InitToStart: -1}, "nothing to do"},
		{"new sandbox", Plan{KillPod: true, CreateSandbox: true, Attempt: 2, InitToStart: -1, ContainersToStart: []int{0, 1}},
			"killPod createSandbox(attempt=2) start=[0 1]"},
		{"init failed", Plan{KillPod: true, InitFailed: true, InitToStart: -1}, "killPod initFailed"},
		{"init", Plan{InitToStart: 1}, "startInit=1"},
		{"kills sorted, IDs shortened, back-offs", Plan{
			InitToStart: -1,
			ContainersToKill: map[string]KillReason{
				"bbbbbbbbbbbbbbbbbbbb": {Name: "b", Message: "changed"},
				"aaaaaaaaaaaaaaaaaaaa": {Name: "a", Message: "unknown"},
			},
			BackingOff: map[string]time.Duration{"z": 20 * time.Second, "y": 10 * time.Second},
		}, "kill=a(aaaaaaaaaaaa): unknown;b(bbbbbbbbbbbb): changed backingOff=y:10s,z:20s"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.plan.String(); got != tc.want {
				t.Errorf("String() = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestPlanEmpty(t *testing.T) {
	cases := []struct {
		name string
		plan Plan
		want bool
	}{
		{"no actions", Plan{InitToStart: -1}, true},
		{"kill pod", Plan{KillPod: true, InitToStart: -1}, false},
		{"create sandbox", Plan{CreateSandbox: true, InitToStart: -1}, false},
		{"start init 0", Plan{InitToStart: 0}, false},
		{"start container", Plan{InitToStart: -1, ContainersToStart: []int{1}}, false},
		{"kill container", Plan{InitToStart: -1, ContainersToKill: map[string]KillReason{"x": {}}}, false},
		{"only backing off: execute must record CrashLoopBackOff", Plan{InitToStart: -1, BackingOff: map[string]time.Duration{"c": time.Second}}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.plan.Empty(); got != tc.want {
				t.Errorf("Empty() = %v, want %v (%s)", got, tc.want, tc.plan)
			}
		})
	}
	// The planner's own result for a steady pod is empty.
	pod := planBasePod()
	if p := ComputePodActions(pod, planBaseStatus(pod), nil, nil); !p.Empty() || !strings.Contains(p.String(), "nothing") {
		t.Errorf("steady pod plan = %s, want empty", p)
	}
}

// fakeProbes answers probe results per kind and container ID.
type fakeProbes map[probe.Kind]map[string]probe.Result

func (f fakeProbes) Get(k probe.Kind, id string) (probe.Result, bool) {
	r, ok := f[k][id]
	return r, ok
}

func TestComputePodActionsProbeFailures(t *testing.T) {
	grace := int64(7)
	for _, tc := range []struct {
		name    string
		policy  v1.RestartPolicy
		probes  fakeProbes
		kill    string
		restart bool
		grace   *int64
	}{
		{"liveness failure restarts", v1.RestartPolicyAlways,
			fakeProbes{probe.Liveness: {"id-foo1": probe.Failure}}, "Container foo1 failed liveness probe, will be restarted", true, &grace},
		{"liveness failure with OnFailure restarts", v1.RestartPolicyOnFailure,
			fakeProbes{probe.Liveness: {"id-foo1": probe.Failure}}, "Container foo1 failed liveness probe, will be restarted", true, &grace},
		{"liveness failure with Never only kills", v1.RestartPolicyNever,
			fakeProbes{probe.Liveness: {"id-foo1": probe.Failure}}, "Container foo1 failed liveness probe", false, &grace},
		{"startup failure restarts", v1.RestartPolicyAlways,
			fakeProbes{probe.Startup: {"id-foo1": probe.Failure}}, "Container foo1 failed startup probe, will be restarted", true, nil},
		{"liveness success keeps", v1.RestartPolicyAlways,
			fakeProbes{probe.Liveness: {"id-foo1": probe.Success}, probe.Startup: {"id-foo1": probe.Unknown}}, "", false, nil},
		{"readiness failure keeps", v1.RestartPolicyAlways,
			fakeProbes{probe.Readiness: {"id-foo1": probe.Failure}}, "", false, nil},
		{"another container's failure", v1.RestartPolicyAlways,
			fakeProbes{probe.Liveness: {"id-other": probe.Failure}}, "", false, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := planBasePod()
			pod.Spec.RestartPolicy = tc.policy
			pod.Spec.Containers[0].LivenessProbe = &v1.Probe{TerminationGracePeriodSeconds: &grace}
			st := planBaseStatus(pod)
			plan := ComputePodActions(pod, st, nil, tc.probes)
			k, killed := plan.ContainersToKill["id-foo1"]
			if tc.kill == "" {
				if killed || len(plan.ContainersToStart) > 0 {
					t.Fatalf("plan %s: want nothing for foo1", plan)
				}
				return
			}
			if !killed || k.Message != tc.kill {
				t.Fatalf("kill = %+v (killed %v), want message %q", k, killed, tc.kill)
			}
			if (k.Grace == nil) != (tc.grace == nil) || (k.Grace != nil && *k.Grace != *tc.grace) {
				t.Errorf("kill grace = %v, want %v", k.Grace, tc.grace)
			}
			if restarted := reflect.DeepEqual(plan.ContainersToStart, []int{0}); restarted != tc.restart {
				t.Errorf("ContainersToStart = %v, want restart %v", plan.ContainersToStart, tc.restart)
			}
		})
	}
}

func TestGraceLeftAfterPreStop(t *testing.T) {
	for _, tc := range []struct {
		grace   int64
		elapsed time.Duration
		want    int64
	}{
		{30, 0, 30},
		{30, 4900 * time.Millisecond, 26}, // whole seconds, as upstream
		{30, 29 * time.Second, 2},         // never below the minimum
		{5, time.Minute, 2},
	} {
		if got := graceLeft(tc.grace, tc.elapsed); got != tc.want {
			t.Errorf("graceLeft(%d, %s) = %d, want %d", tc.grace, tc.elapsed, got, tc.want)
		}
	}
}
