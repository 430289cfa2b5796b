package podworker

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/flowcontrol"
	criv1 "k8s.io/cri-api/pkg/apis/runtime/v1"
	critest "k8s.io/cri-api/pkg/apis/testing"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/nodeagent/nodeagent/pkg/probe"
	"github.com/nodeagent/nodeagent/pkg/runtime"
)

// backoffUntil is a back-off whose restarts keyed by the container's name
// wait while the exit being measured from is after until.
func backoffUntil(until time.Time, d time.Duration) fakeBackoff {
	return fakeBackoff{
		IsInBackOffSinceF: func(_ string, t time.Time) bool { return t.After(until) },
		GetF:              func(string) time.Duration { return d },
	}
}

// withPrevious adds an exited earlier instance of name (older than every
// container already in st) that finished at finished.
func withPrevious(st *runtime.PodStatus, name string, finished time.Time) {
	st.Containers = append(st.Containers, &runtime.ContainerStatus{
		ID: "id-" + name + "-old", SandboxID: "sb0", Name: name,
		State: criv1.ContainerState_CONTAINER_EXITED, ExitCode: 137, FinishedAt: finished,
	})
}

func oneSidecar() v1.Container {
	always := v1.ContainerRestartPolicyAlways
	return v1.Container{Name: "side", Image: "busybox:1", RestartPolicy: &always}
}

func withSidecar(p *v1.Pod) { p.Spec.InitContainers = []v1.Container{oneSidecar()} }

// runningSidecar puts the sidecar, running, first (newest) in st.
func runningSidecar(st *runtime.PodStatus) {
	side := oneSidecar()
	st.Containers = append([]*runtime.ContainerStatus{{ID: "id-side", SandboxID: "sb0", Name: "side",
		Hash: runtime.HashContainer(&side), State: criv1.ContainerState_CONTAINER_RUNNING}}, st.Containers...)
}

// TestComputePodActionsRestartBackoff: every start of a container that has
// an exited instance goes through the back-off, measured from that
// instance — also the restart of a container killed in the same sync.
func TestComputePodActionsRestartBackoff(t *testing.T) {
	recent, long := planFinished.Add(-time.Second), planFinished.Add(-time.Hour)
	bo := backoffUntil(planFinished.Add(-time.Minute), 10*time.Second)
	liveFoo1 := fakeProbes{probe.Liveness: {"id-foo1": probe.Failure}}
	cases := []struct {
		name        string
		pod         func(*v1.Pod)
		status      func(*runtime.PodStatus)
		probes      fakeProbes
		want        planView
		sidecars    []int
		restartFrom map[string]time.Time
	}{
		{
			name:   "liveness kill, no earlier exit: restarts at once, nothing recorded",
			probes: liveFoo1,
			want:   planView{SandboxID: "sb0", InitToStart: -1, Start: []int{0}, Kill: map[string]string{"id-foo1": "foo1"}},
		},
		{
			name:        "liveness kill, earlier exit out of its back-off: restarts, the back-off grows from it",
			status:      func(s *runtime.PodStatus) { withPrevious(s, "foo1", long) },
			probes:      liveFoo1,
			want:        planView{SandboxID: "sb0", InitToStart: -1, Start: []int{0}, Kill: map[string]string{"id-foo1": "foo1"}},
			restartFrom: map[string]time.Time{"foo1": long},
		},
		{
			name:   "liveness kill, earlier exit within its back-off: killed, then backs off",
			status: func(s *runtime.PodStatus) { withPrevious(s, "foo1", recent) },
			probes: liveFoo1,
			want:   planView{SandboxID: "sb0", InitToStart: -1, Kill: map[string]string{"id-foo1": "foo1"}, BackingOff: []string{"foo1"}},
		},
		{
			name:   "startup kill backs off the same way",
			status: func(s *runtime.PodStatus) { withPrevious(s, "foo1", recent) },
			probes: fakeProbes{probe.Startup: {"id-foo1": probe.Failure}},
			want:   planView{SandboxID: "sb0", InitToStart: -1, Kill: map[string]string{"id-foo1": "foo1"}, BackingOff: []string{"foo1"}},
		},
		{
			name: "unknown state: killed, backs off from the exit before it",
			status: func(s *runtime.PodStatus) {
				s.Containers[0].State = criv1.ContainerState_CONTAINER_UNKNOWN
				withPrevious(s, "foo1", recent)
			},
			want: planView{SandboxID: "sb0", InitToStart: -1, Kill: map[string]string{"id-foo1": "foo1"}, BackingOff: []string{"foo1"}},
		},
		{
			name: "sidecar liveness kill within its back-off",
			pod:  withSidecar,
			status: func(s *runtime.PodStatus) {
				runningSidecar(s)
				withPrevious(s, "side", recent)
			},
			probes: fakeProbes{probe.Liveness: {"id-side": probe.Failure}},
			want:   planView{SandboxID: "sb0", InitToStart: -1, Kill: map[string]string{"id-side": "side"}, BackingOff: []string{"side"}},
		},
		{
			name: "sidecar liveness kill, no earlier exit: restarts at once",
			pod:  withSidecar,
			status: func(s *runtime.PodStatus) {
				runningSidecar(s)
			},
			probes:   fakeProbes{probe.Liveness: {"id-side": probe.Failure}},
			want:     planView{SandboxID: "sb0", InitToStart: -1, Kill: map[string]string{"id-side": "side"}},
			sidecars: []int{0},
		},
		{
			name: "sidecar killed during init, within its back-off",
			pod:  func(p *v1.Pod) { p.Spec.InitContainers = sidecarPod().Spec.InitContainers },
			status: func(s *runtime.PodStatus) {
				s.Containers = nil
				runningSidecar(s)
				withPrevious(s, "side", recent)
			},
			probes: fakeProbes{probe.Liveness: {"id-side": probe.Failure}},
			want:   planView{SandboxID: "sb0", InitToStart: -1, Kill: map[string]string{"id-side": "side"}, BackingOff: []string{"side"}},
		},
		{
			name: "new sandbox: the first init container backs off from its run in the old one",
			pod:  withInit,
			status: func(s *runtime.PodStatus) {
				s.Sandboxes[0].State = criv1.PodSandboxState_SANDBOX_NOTREADY
				s.Containers = nil
				addInit(s, "init1", criv1.ContainerState_CONTAINER_EXITED, 0)
			},
			want: planView{KillPod: true, CreateSandbox: true, Attempt: 1, InitToStart: -1, BackingOff: []string{"init1"}},
		},
		{
			name: "init runs of an older sandbox do not count (upstream purges them)",
			pod:  withInit,
			status: func(s *runtime.PodStatus) {
				s.Containers = nil
				addInit(s, "init1", criv1.ContainerState_CONTAINER_EXITED, 0)
				s.Containers[0].SandboxID = "sb-old"
			},
			want: planView{SandboxID: "sb0", InitToStart: 0},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			plan := planOn(tc.pod, tc.status, bo, tc.probes)
			checkView(t, plan, tc.want)
			if !slices.Equal(plan.SidecarsToStart, tc.sidecars) {
				t.Errorf("sidecars to start %v, want %v", plan.SidecarsToStart, tc.sidecars)
			}
			if len(tc.restartFrom) > 0 && !reflect.DeepEqual(plan.RestartFrom, tc.restartFrom) {
				t.Errorf("RestartFrom %v, want %v", plan.RestartFrom, tc.restartFrom)
			}
			if len(tc.restartFrom) == 0 && len(plan.RestartFrom) > 0 && len(tc.want.BackingOff) == 0 {
				t.Errorf("RestartFrom %v, want none", plan.RestartFrom)
			}
		})
	}
}

func TestWithResizeRestartsBacksOff(t *testing.T) {
	pod := planBasePod()
	st := planBaseStatus(pod)
	withPrevious(st, "foo2", planFinished)
	plan := Plan{InitToStart: -1, ContainersToKill: map[string]KillReason{}, BackingOff: map[string]time.Duration{}}
	rp := ResizePlan{Restart: map[string]KillReason{"id-foo2": {Name: "foo2"}}, RestartIndex: []int{1}}
	got := withResizeRestarts(pod, st, alwaysBackoff(20*time.Second), plan, rp)
	if len(got.ContainersToStart) != 0 || got.ContainersToKill["id-foo2"].Name != "foo2" || got.BackingOff["foo2"] != 20*time.Second {
		t.Errorf("plan %s", got)
	}
}

// clockedRuntime is the cri-api fake whose kills are stamped with the
// test's clock, so that the back-off is measured on it.
type clockedRuntime struct {
	*critest.FakeRuntimeService
	clock *testingclock.FakeClock
}

func (r clockedRuntime) StopContainer(ctx context.Context, id string, timeout int64) error {
	if err := r.FakeRuntimeService.StopContainer(ctx, id, timeout); err != nil {
		return err
	}
	r.Lock()
	defer r.Unlock()
	r.Containers[id].FinishedAt = r.clock.Now().UnixNano()
	return nil
}

// failingLiveness is a probe manager whose liveness probe fails for every
// container.
type failingLiveness struct{}

func (failingLiveness) Get(k probe.Kind, _ string) (probe.Result, bool) {
	return probe.Failure, k == probe.Liveness
}
func (failingLiveness) AddPod(*v1.Pod)                         {}
func (failingLiveness) RemovePod(types.UID)                    {}
func (failingLiveness) StopLivenessAndStartup(types.UID)       {}
func (failingLiveness) UpdatePodStatus(*v1.Pod, *v1.PodStatus) {}
func (r *backoffEvents) Eventf(_ apiruntime.Object, _, reason, format string, args ...interface{}) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, reason+": "+fmt.Sprintf(format, args...))
}

type backoffEvents struct {
	mu  sync.Mutex
	got []string
}

func (r *backoffEvents) count(reason string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, e := range r.got {
		if strings.HasPrefix(e, reason+": ") {
			n++
		}
	}
	return n
}

// TestLivenessKillsBackOff drives one worker sync by sync on a fake clock:
// a container its liveness probe kills every time it runs is restarted at
// once twice (no earlier exit, then none in back-off yet), as upstream,
// and from then on waits in CrashLoopBackOff for 10 s, 20 s, 40 s.
func TestLivenessKillsBackOff(t *testing.T) {
	clock := testingclock.NewFakeClock(time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC))
	fake := critest.NewFakeRuntimeService()
	h := newManager(t, fake, critest.NewFakeImageService())
	events := &backoffEvents{}
	d := h.m.workerDeps()
	d.runtime = clockedRuntime{fake, clock}
	d.now, d.probes, d.events = clock.Now, failingLiveness{}, events
	d.backoff = flowcontrol.NewFakeBackOff(backoffInitial, backoffMax, clock)
	pod := scenarioPod("liveness", "busybox:1")
	w := newWorker(d, pod)
	ctx := context.Background()

	container := func() v1.ContainerStatus {
		t.Helper()
		s := w.Status()
		if s == nil || len(s.ContainerStatuses) != 1 {
			t.Fatalf("status %+v", s)
		}
		return s.ContainerStatuses[0]
	}
	// The probe fails a second after each start.
	sync := func() time.Duration {
		clock.Step(time.Second)
		return w.sync(ctx, pod)
	}

	sync()
	if cs := container(); cs.State.Running == nil || cs.RestartCount != 0 {
		t.Fatalf("first start: %+v", cs)
	}
	for want := int32(1); want <= 2; want++ {
		sync()
		if cs := container(); cs.State.Running == nil || cs.RestartCount != want {
			t.Fatalf("kill %d: want an immediate restart (restartCount %d), got %+v", want, want, cs)
		}
	}
	if n := events.count("BackOff"); n != 0 {
		t.Fatalf("%d BackOff events before any back-off", n)
	}
	restarts := int32(2)
	for _, backoff := range []time.Duration{10 * time.Second, 20 * time.Second, 40 * time.Second} {
		next := sync() // killed; the restart waits
		cs := container()
		want := fmt.Sprintf("back-off %s restarting failed container=c0 pod=liveness_default(uid-liveness)", backoff)
		if cs.State.Waiting == nil || cs.State.Waiting.Reason != "CrashLoopBackOff" || cs.State.Waiting.Message != want {
			t.Fatalf("after kill: want CrashLoopBackOff %q, got %+v", want, cs.State)
		}
		if cs.RestartCount != restarts || cs.LastTerminationState.Terminated == nil {
			t.Fatalf("after kill: restartCount %d (want %d), last state %+v", cs.RestartCount, restarts, cs.LastTerminationState)
		}
		if next != backoff {
			t.Fatalf("next sync in %v, want at the end of the %v back-off", next, backoff)
		}
		clock.Step(backoff - time.Second) // one second short of the end
		if w.sync(ctx, pod); container().State.Waiting == nil {
			t.Fatalf("restarted before the %v back-off ended: %+v", backoff, container())
		}
		sync()
		restarts++
		if cs := container(); cs.State.Running == nil || cs.RestartCount != restarts {
			t.Fatalf("after the %v back-off: want running with restartCount %d, got %+v", backoff, restarts, cs)
		}
	}
	want := "BackOff: Back-off restarting failed container c0 in pod liveness_default(uid-liveness)"
	if events.count("BackOff") < 3 || !slices.Contains(events.got, want) {
		t.Errorf("events %v, want %q", events.got, want)
	}
}
