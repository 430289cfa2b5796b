package podworker

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	criv1 "k8s.io/cri-api/pkg/apis/runtime/v1"
	critest "k8s.io/cri-api/pkg/apis/testing"

	"github.com/nodeagent/nodeagent/pkg/runtime"
)

func guaranteed(cpu, mem string) v1.ResourceRequirements {
	rl := v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu), v1.ResourceMemory: resource.MustParse(mem)}
	return v1.ResourceRequirements{Requests: rl, Limits: rl.DeepCopy()}
}

// resizeBasePod is planBasePod with both containers at 100m/64Mi.
func resizeBasePod() *v1.Pod {
	pod := planBasePod()
	for i := range pod.Spec.Containers {
		pod.Spec.Containers[i].Resources = guaranteed("100m", "64Mi")
	}
	return pod
}

var resizeNode = v1.ResourceList{v1.ResourceCPU: resource.MustParse("2"), v1.ResourceMemory: resource.MustParse("1Gi"), v1.ResourcePods: resource.MustParse("1")}

func TestDecideResize(t *testing.T) {
	other := resizeBasePod()
	other.UID = "other"
	other.Spec.Containers[0].Resources = guaranteed("1500m", "64Mi")
	for _, tc := range []struct {
		name   string
		mutate func(*v1.Pod)
		others []*v1.Pod
		want   ResizeDecision
	}{
		{"unchanged", func(*v1.Pod) {}, nil, ResizeDecision{}},
		{"fits", func(p *v1.Pod) { p.Spec.Containers[0].Resources = guaranteed("200m", "64Mi") }, nil, ResizeDecision{Admit: true}},
		// The node's pods limit of 1 does not stop a pod already here.
		{"fits beside another pod", func(p *v1.Pod) { p.Spec.Containers[0].Resources = guaranteed("200m", "64Mi") }, []*v1.Pod{other}, ResizeDecision{Admit: true}},
		{"cpu beyond the node", func(p *v1.Pod) { p.Spec.Containers[0].Resources = guaranteed("3", "64Mi") }, nil,
			ResizeDecision{Reason: v1.PodReasonInfeasible, Message: "Node didn't have enough capacity: cpu, requested: 3100, capacity: 2000"}},
		{"memory before cpu", func(p *v1.Pod) { p.Spec.Containers[0].Resources = guaranteed("3", "2Gi") }, nil,
			ResizeDecision{Reason: v1.PodReasonInfeasible, Message: "Node didn't have enough capacity: memory, requested: 2214592512, capacity: 1073741824"}},
		{"not beside another pod", func(p *v1.Pod) { p.Spec.Containers[0].Resources = guaranteed("500m", "64Mi") }, []*v1.Pod{other},
			ResizeDecision{Reason: v1.PodReasonDeferred, Message: "Node didn't have enough resource: cpu, requested: 600, used: 1600, capacity: 2000"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := resizeBasePod()
			alloc := AllocationOf(pod)
			tc.mutate(pod)
			if got := DecideResize(pod, alloc, append(tc.others, pod), resizeNode); got != tc.want {
				t.Errorf("DecideResize = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestWithAllocation(t *testing.T) {
	pod := resizeBasePod()
	alloc := AllocationOf(pod)
	if WithAllocation(pod, alloc) != pod {
		t.Error("an unchanged pod was copied")
	}
	pod.Spec.Containers[1].Resources = guaranteed("300m", "64Mi")
	got := WithAllocation(pod, alloc)
	if got.Spec.Containers[1].Resources.Limits.Cpu().String() != "100m" || pod.Spec.Containers[1].Resources.Limits.Cpu().String() != "300m" {
		t.Errorf("allocated pod cpu %v, spec %v", got.Spec.Containers[1].Resources.Limits, pod.Spec.Containers[1].Resources.Limits)
	}
}

func TestComputeResizeActions(t *testing.T) {
	restartMemory := []v1.ContainerResizePolicy{{ResourceName: v1.ResourceMemory, RestartPolicy: v1.RestartContainer}}
	for _, tc := range []struct {
		name   string
		mutate func(pod *v1.Pod, st *runtime.PodStatus)
		want   string
	}{
		{"nothing changed", func(*v1.Pod, *runtime.PodStatus) {}, "nothing to resize"},
		{"cpu, NotRequired", func(p *v1.Pod, _ *runtime.PodStatus) { p.Spec.Containers[0].Resources = guaranteed("200m", "64Mi") }, "update=foo1"},
		{"cpu of a RestartContainer-for-memory container", func(p *v1.Pod, _ *runtime.PodStatus) {
			p.Spec.Containers[0].ResizePolicy = restartMemory
			p.Spec.Containers[0].Resources = guaranteed("200m", "64Mi")
		}, "update=foo1"},
		{"memory, RestartContainer", func(p *v1.Pod, _ *runtime.PodStatus) {
			p.Spec.Containers[1].ResizePolicy = restartMemory
			p.Spec.Containers[1].Resources = guaranteed("100m", "128Mi")
		}, "restart=foo2(id-foo2)"},
		{"both containers", func(p *v1.Pod, _ *runtime.PodStatus) {
			p.Spec.Containers[0].Resources = guaranteed("200m", "64Mi")
			p.Spec.Containers[1].ResizePolicy = restartMemory
			p.Spec.Containers[1].Resources = guaranteed("200m", "128Mi")
		}, "restart=foo2(id-foo2) update=foo1"},
		{"not running", func(p *v1.Pod, st *runtime.PodStatus) {
			p.Spec.Containers[0].Resources = guaranteed("200m", "64Mi")
			st.Containers[0].State = criv1.ContainerState_CONTAINER_EXITED // it starts with its allocation
		}, "nothing to resize"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := resizeBasePod()
			st := planBaseStatus(pod)
			actuated := AllocationOf(pod)
			tc.mutate(pod, st)
			p := ComputeResizeActions(pod, st, actuated)
			if got := p.String(); got != tc.want {
				t.Errorf("plan %q, want %q", got, tc.want)
			}
			for id, k := range p.Restart {
				if want := "Container " + k.Name + " resize requires restart"; k.Message != want || !strings.HasSuffix(id, k.Name) {
					t.Errorf("restart %s: %q, want %q", id, k.Message, want)
				}
			}
		})
	}
}

func TestWithResizeRestarts(t *testing.T) {
	plan := Plan{InitToStart: -1, ContainersToKill: map[string]KillReason{}, ContainersToStart: []int{0}}
	rp := ResizePlan{Restart: map[string]KillReason{"id-foo2": {Name: "foo2"}}, RestartIndex: []int{1}}
	pod := planBasePod()
	got := withResizeRestarts(pod, planBaseStatus(pod), nil, plan, rp)
	if !reflect.DeepEqual(got.ContainersToStart, []int{0, 1}) || got.ContainersToKill["id-foo2"].Name != "foo2" {
		t.Errorf("plan %s", got)
	}
}

func TestUpperBound(t *testing.T) {
	pod := resizeBasePod()
	actuated := AllocationOf(pod)
	pod.Spec.Containers[0].Resources = guaranteed("200m", "32Mi")
	got := upperBound(pod, actuated).Spec.Containers[0].Resources.Limits
	if got.Cpu().String() != "200m" || got.Memory().String() != "64Mi" {
		t.Errorf("upper bound limits %v, want cpu 200m memory 64Mi", got)
	}
}

func TestResizeConditions(t *testing.T) {
	now := metav1.Unix(100, 0)
	earlier := metav1.Unix(50, 0)
	pending := ResizeDecision{Reason: v1.PodReasonDeferred, Message: "m"}
	old := []v1.PodCondition{{Type: v1.PodResizePending, Status: v1.ConditionTrue, Reason: v1.PodReasonDeferred, Message: "m", LastTransitionTime: earlier, LastProbeTime: earlier}}
	got := resizeConditions(pending, 3, true, 2, "boom", old, now)
	if len(got) != 2 || got[0].LastTransitionTime != earlier || got[0].ObservedGeneration != 3 || got[1].ObservedGeneration != 2 || got[1].Type != v1.PodResizeInProgress || got[1].Reason != v1.PodReasonError || got[1].Message != "boom" || got[1].LastTransitionTime != now {
		t.Errorf("conditions %+v", got)
	}
	if got := resizeConditions(ResizeDecision{}, 0, false, 0, "", old, now); len(got) != 0 {
		t.Errorf("conditions with nothing to resize: %+v", got)
	}
}

func TestSetResizeStatus(t *testing.T) {
	pod := resizeBasePod()
	alloc := AllocationOf(pod)
	actuated := Allocation{"foo1": guaranteed("50m", "64Mi")}
	s := v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{
		{Name: "foo1", State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}},
		{Name: "foo2", State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{}}},
	}}
	setResizeStatus(&s, alloc, actuated)
	if a := s.ContainerStatuses[0].AllocatedResources; a.Cpu().String() != "100m" {
		t.Errorf("allocatedResources %v", a)
	}
	if r := s.ContainerStatuses[0].Resources; r == nil || r.Limits.Cpu().String() != "50m" {
		t.Errorf("resources %v, want the actuated 50m", r)
	}
	if s.ContainerStatuses[1].Resources != nil || s.ContainerStatuses[1].AllocatedResources == nil {
		t.Errorf("waiting container: resources %v, allocated %v", s.ContainerStatuses[1].Resources, s.ContainerStatuses[1].AllocatedResources)
	}
}

func TestResizeEventMessage(t *testing.T) {
	pod := resizeBasePod()
	pod.Generation = 2
	pod.Spec.Containers = pod.Spec.Containers[:1]
	want := `Pod resize started: {"containers":[{"name":"foo1","resources":{"limits":{"cpu":"100m","memory":"64Mi"},"requests":{"cpu":"100m","memory":"64Mi"}}}],"generation":2}`
	if got := resizeEventMessage(pod, "Pod resize started", ""); got != want {
		t.Errorf("message\n%s\nwant\n%s", got, want)
	}
}

// TestResizeScenario: a running pod's cpu resize is admitted and applied
// with UpdateContainerResources, without a restart, and reported; one
// beyond the node's cpu is Infeasible and changes nothing.
func TestResizeScenario(t *testing.T) {
	rec := &reasonEvents{}
	h := &harness{rt: critest.NewFakeRuntimeService(), img: critest.NewFakeImageService(), pods: make(chan []*v1.Pod),
		logsDir: t.TempDir(), rootDir: t.TempDir()}
	m, err := New(Config{
		Runtime: h.rt, Images: h.img, NodeName: "node1", NodeIP: "192.0.2.1", Allocatable: resizeNode,
		RootDir: h.rootDir, PodLogsDir: h.logsDir, Logger: quietLogger(), Events: rec,
		ResyncPeriod: time.Hour, RetryPeriod: 20 * time.Millisecond, HousekeepingPeriod: time.Hour,
	})
	if err != nil {
		t.Fatal(err)
	}
	h.m = m
	h.start(t)
	pod := scenarioPod("resize", "busybox:1")
	pod.Spec.Containers[0].Resources = guaranteed("100m", "64Mi")
	h.pods <- []*v1.Pod{pod}
	eventually(t, "the pod running", func() (bool, string) { return allRunning(h.pod(pod.UID)) })
	before := h.pod(pod.UID).Status.ContainerStatuses[0]
	if before.Resources == nil || before.Resources.Limits.Cpu().String() != "100m" || before.AllocatedResources.Cpu().String() != "100m" {
		t.Fatalf("status before the resize: resources %v, allocated %v", before.Resources, before.AllocatedResources)
	}

	resized := pod.DeepCopy()
	resized.Generation = 2
	resized.Spec.Containers[0].Resources = guaranteed("200m", "64Mi")
	h.pods <- []*v1.Pod{resized}
	eventually(t, "the resize in the status", func() (bool, string) {
		cs := h.pod(pod.UID).Status.ContainerStatuses[0]
		return cs.Resources.Limits.Cpu().String() == "200m" && cs.AllocatedResources.Cpu().String() == "200m", fmt.Sprintf("%v", cs.Resources)
	})
	after := h.pod(pod.UID).Status.ContainerStatuses[0]
	if after.ContainerID != before.ContainerID || after.RestartCount != 0 {
		t.Errorf("restarted: %s -> %s, restarts %d", before.ContainerID, after.ContainerID, after.RestartCount)
	}
	h.rt.Lock()
	called := slices.Contains(h.rt.Called, "UpdateContainerResources")
	h.rt.Unlock()
	if !called {
		t.Error("UpdateContainerResources not called")
	}
	for _, reason := range []string{"ResizeStarted: Pod resize started", "ResizeCompleted: Pod resize completed"} {
		eventually(t, reason, func() (bool, string) {
			rec.mu.Lock()
			defer rec.mu.Unlock()
			return slices.ContainsFunc(rec.events, func(e string) bool { return strings.HasPrefix(e, reason) }), strings.Join(rec.events, "; ")
		})
	}

	huge := resized.DeepCopy()
	huge.Generation = 3
	huge.Spec.Containers[0].Resources = guaranteed("64", "64Mi")
	h.pods <- []*v1.Pod{huge}
	eventually(t, "PodResizePending", func() (bool, string) {
		for _, c := range h.pod(pod.UID).Status.Conditions {
			if c.Type == v1.PodResizePending {
				return c.Reason == v1.PodReasonInfeasible && c.Message == "Node didn't have enough capacity: cpu, requested: 64000, capacity: 2000" && c.ObservedGeneration == 3, c.Message
			}
		}
		return false, "no condition"
	})
	if cs := h.pod(pod.UID).Status.ContainerStatuses[0]; cs.AllocatedResources.Cpu().String() != "200m" {
		t.Errorf("an infeasible resize was allocated: %v", cs.AllocatedResources)
	}
}

// A sidecar whose memory resize restarts it is started again among the
// sidecars.
func TestResizeRestartsSidecar(t *testing.T) {
	pod := resizeBasePod()
	always := v1.ContainerRestartPolicyAlways
	pod.Spec.InitContainers = []v1.Container{{Name: "side", Image: "busybox:1", RestartPolicy: &always, Resources: guaranteed("100m", "64Mi"),
		ResizePolicy: []v1.ContainerResizePolicy{{ResourceName: v1.ResourceMemory, RestartPolicy: v1.RestartContainer}}}}
	st := planBaseStatus(pod)
	st.Containers = append(st.Containers, &runtime.ContainerStatus{ID: "id-side", Name: "side", State: criv1.ContainerState_CONTAINER_RUNNING})
	actuated := AllocationOf(pod)
	pod.Spec.InitContainers[0].Resources = guaranteed("100m", "128Mi")
	rp := ComputeResizeActions(pod, st, actuated)
	plan := withResizeRestarts(pod, st, nil, Plan{InitToStart: -1, ContainersToKill: map[string]KillReason{}}, rp)
	if !reflect.DeepEqual(plan.SidecarsToStart, []int{0}) || plan.ContainersToKill["id-side"].Name != "side" || len(plan.ContainersToStart) != 0 {
		t.Errorf("plan %s", plan)
	}
}

// The allocation and the actuated resources survive the worker: a new
// one (the agent restarted) reads them back instead of taking the spec's.
func TestResizeCheckpoint(t *testing.T) {
	d := deps{rootDir: t.TempDir(), log: quietLogger()}
	pod := resizeBasePod()
	w := &worker{d: d, uid: pod.UID, log: d.log}
	w.resize = resizeState{alloc: AllocationOf(pod), actuated: Allocation{"foo1": guaranteed("50m", "64Mi")}, seen: map[string]string{"foo1": "id-foo1"}}
	w.saveResizeState()
	again := &worker{d: d, uid: pod.UID, log: d.log}
	if !again.loadResizeState() {
		t.Fatal("no checkpoint read")
	}
	if got := again.resize.actuated["foo1"]; got.Limits.Cpu().String() != "50m" || again.resize.seen["foo1"] != "id-foo1" || len(again.resize.alloc) != 2 {
		t.Errorf("read back %+v", again.resize)
	}
}

// statsRuntime is the fake CRI answering container stats with usage.
type statsRuntime struct {
	*critest.FakeRuntimeService
	usage map[string]uint64
}

func (s statsRuntime) ListContainerStats(_ context.Context, f *criv1.ContainerStatsFilter) ([]*criv1.ContainerStats, error) {
	u, ok := s.usage[f.GetId()]
	if !ok {
		return nil, nil
	}
	return []*criv1.ContainerStats{{Attributes: &criv1.ContainerAttributes{Id: f.GetId()}, Memory: &criv1.MemoryUsage{UsageBytes: &criv1.UInt64Value{Value: u}}}}, nil
}

// A memory limit goes down only above the container's usage (the
// kubelet's best-effort OOM guard).
func TestCheckMemoryDecrease(t *testing.T) {
	w := &worker{d: deps{runtime: statsRuntime{critest.NewFakeRuntimeService(), map[string]uint64{"busy": 40 << 20, "idle": 10 << 20}}}}
	cur := guaranteed("100m", "64Mi")
	for _, tc := range []struct {
		id, mem, want string
	}{
		{"busy", "128Mi", ""}, // an increase is not checked
		{"idle", "32Mi", ""},
		{"busy", "32Mi", `attempting to set container "c" memory limit (33554432) below current usage (41943040)`},
		{"gone", "32Mi", `missing container "c" memory usage`},
	} {
		err := w.checkMemoryDecrease(context.Background(), ContainerResize{Name: "c", ID: tc.id, Resources: guaranteed("100m", tc.mem)}, cur)
		if got := fmt.Sprint(err); (tc.want == "" && err != nil) || (tc.want != "" && got != tc.want) {
			t.Errorf("%s to %s: %v, want %q", tc.id, tc.mem, err, tc.want)
		}
	}
}
