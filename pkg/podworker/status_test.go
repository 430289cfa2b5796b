package podworker

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	criv1 "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodeagent/nodeagent/pkg/podworker/criconfig"
	"github.com/nodeagent/nodeagent/pkg/runtime"
)

// API container statuses in the style of upstream kubelet_pods_test.go.
func csRunning(n string) v1.ContainerStatus {
	return v1.ContainerStatus{Name: n, State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}}
}
func csWaiting(n string) v1.ContainerStatus {
	return v1.ContainerStatus{Name: n, State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{}}}
}
func csTerminated(n string, code int32) v1.ContainerStatus {
	return v1.ContainerStatus{Name: n, State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: code}}}
}
func csWaitingLast(n string, code int32) v1.ContainerStatus {
	s := csWaiting(n)
	s.LastTerminationState.Terminated = &v1.ContainerStateTerminated{ExitCode: code}
	return s
}
func cs(list ...v1.ContainerStatus) []v1.ContainerStatus { return list }

func TestPodPhase(t *testing.T) {
	ab := []v1.Container{{Name: "A"}, {Name: "B"}}
	cases := []struct {
		name   string
		policy v1.RestartPolicy
		init   bool
		inits  []v1.ContainerStatus
		apps   []v1.ContainerStatus
		want   v1.PodPhase
	}{
		{"Always: waiting", v1.RestartPolicyAlways, false, nil, cs(csWaiting("A"), csWaiting("B")), v1.PodPending},
		{"Always: all running", v1.RestartPolicyAlways, false, nil, cs(csRunning("A"), csRunning("B")), v1.PodRunning},
		{"Always: all stopped", v1.RestartPolicyAlways, false, nil, cs(csTerminated("A", -1), csTerminated("B", 0)), v1.PodRunning},
		{"Always: all succeeded", v1.RestartPolicyAlways, false, nil, cs(csTerminated("A", 0), csTerminated("B", 0)), v1.PodRunning},
		{"Always: running and stopped", v1.RestartPolicyAlways, false, nil, cs(csRunning("A"), csTerminated("B", -1)), v1.PodRunning},
		{"Always: running and waiting", v1.RestartPolicyAlways, false, nil, cs(csRunning("A"), csWaiting("B")), v1.PodPending},
		{"Always: back-off crashloop", v1.RestartPolicyAlways, false, nil, cs(csRunning("A"), csWaitingLast("B", 0)), v1.PodRunning},
		{"Always: all crashlooping", v1.RestartPolicyAlways, false, nil, cs(csWaitingLast("A", 1), csWaitingLast("B", 1)), v1.PodRunning},
		{"Never: waiting", v1.RestartPolicyNever, false, nil, cs(csWaiting("A"), csWaiting("B")), v1.PodPending},
		{"Never: all running", v1.RestartPolicyNever, false, nil, cs(csRunning("A"), csRunning("B")), v1.PodRunning},
		{"Never: all succeeded", v1.RestartPolicyNever, false, nil, cs(csTerminated("A", 0), csTerminated("B", 0)), v1.PodSucceeded},
		{"Never: all failed", v1.RestartPolicyNever, false, nil, cs(csTerminated("A", -1), csTerminated("B", -1)), v1.PodFailed},
		{"Never: one failed one succeeded", v1.RestartPolicyNever, false, nil, cs(csTerminated("A", 0), csTerminated("B", 2)), v1.PodFailed},
		{"Never: running and succeeded", v1.RestartPolicyNever, false, nil, cs(csRunning("A"), csTerminated("B", 0)), v1.PodRunning},
		{"Never: running and waiting", v1.RestartPolicyNever, false, nil, cs(csRunning("A"), csWaiting("B")), v1.PodPending},
		{"OnFailure: waiting", v1.RestartPolicyOnFailure, false, nil, cs(csWaiting("A"), csWaiting("B")), v1.PodPending},
		{"OnFailure: all running", v1.RestartPolicyOnFailure, false, nil, cs(csRunning("A"), csRunning("B")), v1.PodRunning},
		{"OnFailure: all succeeded", v1.RestartPolicyOnFailure, false, nil, cs(csTerminated("A", 0), csTerminated("B", 0)), v1.PodSucceeded},
		{"OnFailure: all failed", v1.RestartPolicyOnFailure, false, nil, cs(csTerminated("A", -1), csTerminated("B", -1)), v1.PodRunning},
		{"OnFailure: running and succeeded", v1.RestartPolicyOnFailure, false, nil, cs(csRunning("A"), csTerminated("B", 0)), v1.PodRunning},
		{"OnFailure: running and waiting", v1.RestartPolicyOnFailure, false, nil, cs(csRunning("A"), csWaiting("B")), v1.PodPending},
		{"OnFailure: back-off crashloop", v1.RestartPolicyOnFailure, false, nil, cs(csRunning("A"), csWaitingLast("B", 0)), v1.PodRunning},
		// Init containers (X), with the app containers PodInitializing.
		{"Always init: empty", v1.RestartPolicyAlways, true, cs(csWaiting("X")), cs(csWaiting("A"), csWaiting("B")), v1.PodPending},
		{"Always init: running", v1.RestartPolicyAlways, true, cs(csRunning("X")), cs(csWaiting("A"), csWaiting("B")), v1.PodPending},
		{"Always init: terminated non-zero", v1.RestartPolicyAlways, true, cs(csTerminated("X", -1)), cs(csWaiting("A"), csWaiting("B")), v1.PodPending},
		{"Always init: waiting, last terminated zero", v1.RestartPolicyAlways, true, cs(csWaitingLast("X", 0)), cs(csWaiting("A"), csWaiting("B")), v1.PodPending},
		{"Always init: waiting, last terminated non-zero", v1.RestartPolicyAlways, true, cs(csWaitingLast("X", -1)), cs(csWaiting("A"), csWaiting("B")), v1.PodPending},
		{"Always init: succeeded, apps running", v1.RestartPolicyAlways, true, cs(csTerminated("X", 0)), cs(csRunning("A"), csRunning("B")), v1.PodRunning},
		{"Never init: running", v1.RestartPolicyNever, true, cs(csRunning("X")), cs(csWaiting("A"), csWaiting("B")), v1.PodPending},
		{"Never init: terminated non-zero", v1.RestartPolicyNever, true, cs(csTerminated("X", -1)), cs(csWaiting("A"), csWaiting("B")), v1.PodFailed},
		{"Never init: waiting, last terminated zero", v1.RestartPolicyNever, true, cs(csWaitingLast("X", 0)), cs(csWaiting("A"), csWaiting("B")), v1.PodPending},
		{"Never init: waiting, last terminated non-zero", v1.RestartPolicyNever, true, cs(csWaitingLast("X", -1)), cs(csWaiting("A"), csWaiting("B")), v1.PodFailed},
		{"Never init: succeeded, apps running", v1.RestartPolicyNever, true, cs(csTerminated("X", 0)), cs(csRunning("A"), csRunning("B")), v1.PodRunning},
		{"OnFailure init: terminated non-zero", v1.RestartPolicyOnFailure, true, cs(csTerminated("X", 1)), cs(csWaiting("A"), csWaiting("B")), v1.PodPending},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := &v1.Pod{Spec: v1.PodSpec{Containers: ab, RestartPolicy: tc.policy}}
			if tc.init {
				pod.Spec.InitContainers = []v1.Container{{Name: "X"}}
			}
			if got := podPhase(pod, false, tc.inits, tc.apps); got != tc.want {
				t.Errorf("podPhase = %s, want %s", got, tc.want)
			}
		})
	}
}

var (
	stNow     = time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	stStarted = stNow.Add(-time.Hour)
	stDone    = stNow.Add(-time.Minute)
)

func statusPod() *v1.Pod {
	pod := &v1.Pod{}
	pod.Name, pod.Namespace, pod.UID = "web", "default", "uid-1"
	pod.Spec.RestartPolicy = v1.RestartPolicyAlways
	pod.Spec.Containers = []v1.Container{{Name: "a", Image: "img-a"}, {Name: "b", Image: "img-b"}}
	return pod
}

func readySandbox(ips ...string) []*runtime.SandboxStatus {
	return []*runtime.SandboxStatus{{ID: "sb", State: criv1.PodSandboxState_SANDBOX_READY, IPs: ips}}
}

func rtRunning(name, id string, restarts int) *runtime.ContainerStatus {
	return &runtime.ContainerStatus{ID: id, Name: name, State: criv1.ContainerState_CONTAINER_RUNNING,
		RestartCount: restarts, StartedAt: stStarted, ImageRef: "sha256:" + name}
}

func rtExited(name, id string, code int32, reason string) *runtime.ContainerStatus {
	return &runtime.ContainerStatus{ID: id, Name: name, State: criv1.ContainerState_CONTAINER_EXITED,
		ExitCode: code, Reason: reason, StartedAt: stStarted, FinishedAt: stDone}
}

func terminated(id string, code int32, reason string) v1.ContainerState {
	return v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: code, Reason: reason,
		StartedAt: metav1.NewTime(stStarted), FinishedAt: metav1.NewTime(stDone), ContainerID: "containerd://" + id}}
}

func waiting(reason, msg string) v1.ContainerState {
	return v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: reason, Message: msg}}
}

func TestGenerateStatusContainerStatuses(t *testing.T) {
	running := v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: metav1.NewTime(stStarted)}}
	cases := []struct {
		name       string
		init       bool
		containers []*runtime.ContainerStatus // newest first
		waiting    map[string]Waiting
		terminal   bool
		wantState  v1.ContainerState
		wantLast   v1.ContainerState
		wantID     string
		restarts   int32
		ready      bool
	}{
		{name: "running", containers: []*runtime.ContainerStatus{rtRunning("a", "c1", 0)},
			wantState: running, wantID: "containerd://c1", ready: true},
		{name: "terminated, no runtime reason, exit 0: Completed", containers: []*runtime.ContainerStatus{rtExited("a", "c1", 0, "")},
			wantState: terminated("c1", 0, "Completed"), wantID: "containerd://c1"},
		{name: "terminated, no runtime reason, exit 2: Error", containers: []*runtime.ContainerStatus{rtExited("a", "c1", 2, "")},
			wantState: terminated("c1", 2, "Error"), wantID: "containerd://c1"},
		{name: "terminated OOMKilled keeps the runtime's reason", containers: []*runtime.ContainerStatus{rtExited("a", "c1", 137, "OOMKilled")},
			wantState: terminated("c1", 137, "OOMKilled"), wantID: "containerd://c1"},
		{name: "not created yet: ContainerCreating", wantState: waiting("ContainerCreating", "")},
		{name: "created, not started: ContainerCreating",
			containers: []*runtime.ContainerStatus{{ID: "c1", Name: "a", State: criv1.ContainerState_CONTAINER_CREATED}},
			wantState:  waiting("ContainerCreating", ""), wantID: "containerd://c1"},
		{name: "init containers pending: PodInitializing", init: true, wantState: waiting("PodInitializing", "")},
		{name: "recorded pull failure", waiting: map[string]Waiting{"a": {ReasonErrImagePull, "Failed to pull image \"img-a\": boom"}},
			wantState: waiting("ErrImagePull", "Failed to pull image \"img-a\": boom")},
		{name: "CrashLoopBackOff shows the exit as lastState",
			containers: []*runtime.ContainerStatus{rtExited("a", "c3", 1, "Error")},
			waiting:    map[string]Waiting{"a": {"CrashLoopBackOff", "back-off 40s restarting failed container=a pod=web_default(uid-1)"}},
			wantState:  waiting("CrashLoopBackOff", "back-off 40s restarting failed container=a pod=web_default(uid-1)"),
			wantLast:   terminated("c3", 1, "Error"), wantID: "containerd://c3"},
		{name: "restarted: previous exit is lastState, restartCount from the runtime",
			containers: []*runtime.ContainerStatus{rtRunning("a", "c2", 3), rtExited("a", "c1", 1, "Error")},
			wantState:  running, wantLast: terminated("c1", 1, "Error"), wantID: "containerd://c2", restarts: 3, ready: true},
		{name: "terminal pod ignores recorded waiting reasons",
			containers: []*runtime.ContainerStatus{rtExited("a", "c1", 1, "")},
			waiting:    map[string]Waiting{"a": {"CrashLoopBackOff", "x"}}, terminal: true,
			wantState: terminated("c1", 1, "Error"), wantID: "containerd://c1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := statusPod()
			if tc.init {
				pod.Spec.InitContainers = []v1.Container{{Name: "i", Image: "img-i"}}
			}
			st := &runtime.PodStatus{Sandboxes: readySandbox("10.0.0.1"), Containers: tc.containers}
			s := GenerateStatus(StatusInput{Pod: pod, Runtime: st, Waiting: tc.waiting, Terminal: tc.terminal, Now: stNow})
			got := s.ContainerStatuses[0]
			if got.Name != "a" || got.Image != "img-a" {
				t.Errorf("name/image = %s/%s", got.Name, got.Image)
			}
			if !reflect.DeepEqual(got.State, tc.wantState) {
				t.Errorf("state = %+v, want %+v", got.State, tc.wantState)
			}
			if !reflect.DeepEqual(got.LastTerminationState, tc.wantLast) {
				t.Errorf("lastState = %+v, want %+v", got.LastTerminationState, tc.wantLast)
			}
			if got.ContainerID != tc.wantID || got.RestartCount != tc.restarts || got.Ready != tc.ready {
				t.Errorf("containerID/restartCount/ready = %q/%d/%v, want %q/%d/%v",
					got.ContainerID, got.RestartCount, got.Ready, tc.wantID, tc.restarts, tc.ready)
			}
			if got.Started == nil || *got.Started != tc.ready {
				t.Errorf("started = %v, want %v", got.Started, tc.ready)
			}
		})
	}
}

func TestGenerateStatusInitContainerReady(t *testing.T) {
	pod := statusPod()
	pod.Spec.InitContainers = []v1.Container{{Name: "i1"}, {Name: "i2"}}
	st := &runtime.PodStatus{Sandboxes: readySandbox("10.0.0.1"), Containers: []*runtime.ContainerStatus{
		rtRunning("i2", "c2", 0), rtExited("i1", "c1", 0, "Completed"),
	}}
	s := GenerateStatus(StatusInput{Pod: pod, Runtime: st, Now: stNow})
	if !s.InitContainerStatuses[0].Ready || s.InitContainerStatuses[1].Ready {
		t.Errorf("init ready = %v/%v, want true (succeeded) / false (running)", s.InitContainerStatuses[0].Ready, s.InitContainerStatuses[1].Ready)
	}
}

func TestGenerateStatusPodFields(t *testing.T) {
	cases := []struct {
		name        string
		hostNetwork bool
		sandboxes   []*runtime.SandboxStatus
		wantIP      string
		wantIPs     []v1.PodIP
	}{
		{"dual stack", false, readySandbox("10.0.0.7", "fd00::7"), "10.0.0.7", []v1.PodIP{{IP: "10.0.0.7"}, {IP: "fd00::7"}}},
		{"no sandbox yet", false, nil, "", nil},
		{"host network uses the host IP", true,
			[]*runtime.SandboxStatus{{ID: "sb", State: criv1.PodSandboxState_SANDBOX_READY, HostNet: true}},
			"192.0.2.10", []v1.PodIP{{IP: "192.0.2.10"}}},
		{"host network, sandbox stopped", true,
			[]*runtime.SandboxStatus{{ID: "sb", State: criv1.PodSandboxState_SANDBOX_NOTREADY}},
			"192.0.2.10", []v1.PodIP{{IP: "192.0.2.10"}}},
		{"host network, no sandbox yet", true, nil, "192.0.2.10", []v1.PodIP{{IP: "192.0.2.10"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := statusPod()
			pod.Spec.HostNetwork = tc.hostNetwork
			s := GenerateStatus(StatusInput{Pod: pod, Runtime: &runtime.PodStatus{Sandboxes: tc.sandboxes},
				HostIP: "192.0.2.10", StartTime: stStarted, Now: stNow})
			if s.PodIP != tc.wantIP || !reflect.DeepEqual(s.PodIPs, tc.wantIPs) {
				t.Errorf("podIP/podIPs = %q/%v, want %q/%v", s.PodIP, s.PodIPs, tc.wantIP, tc.wantIPs)
			}
			if s.HostIP != "192.0.2.10" || !reflect.DeepEqual(s.HostIPs, []v1.HostIP{{IP: "192.0.2.10"}}) {
				t.Errorf("hostIP/hostIPs = %q/%v", s.HostIP, s.HostIPs)
			}
			if s.StartTime == nil || !s.StartTime.Time.Equal(stStarted) {
				t.Errorf("startTime = %v, want %v", s.StartTime, stStarted)
			}
		})
	}
	s := GenerateStatus(StatusInput{Pod: statusPod(), Runtime: &runtime.PodStatus{}, Now: stNow})
	if s.StartTime != nil || s.HostIPs != nil {
		t.Errorf("zero StartTime/HostIP should be unset, got %v / %v", s.StartTime, s.HostIPs)
	}
}

func TestQOSClass(t *testing.T) {
	rl := func(cpu, mem string) v1.ResourceList {
		l := v1.ResourceList{}
		if cpu != "" {
			l[v1.ResourceCPU] = resource.MustParse(cpu)
		}
		if mem != "" {
			l[v1.ResourceMemory] = resource.MustParse(mem)
		}
		return l
	}
	res := func(req, lim v1.ResourceList) v1.ResourceRequirements {
		return v1.ResourceRequirements{Requests: req, Limits: lim}
	}
	cases := []struct {
		name string
		init []v1.ResourceRequirements
		apps []v1.ResourceRequirements
		want v1.PodQOSClass
	}{
		{"no resources", nil, []v1.ResourceRequirements{{}, {}}, v1.PodQOSBestEffort},
		{"zero requests", nil, []v1.ResourceRequirements{res(rl("0", "0"), nil)}, v1.PodQOSBestEffort},
		{"only other resources", nil, []v1.ResourceRequirements{res(v1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}, nil)}, v1.PodQOSBestEffort},
		{"requests only", nil, []v1.ResourceRequirements{res(rl("100m", ""), nil)}, v1.PodQOSBurstable},
		{"limits equal requests", nil, []v1.ResourceRequirements{res(rl("1", "1Gi"), rl("1", "1Gi")), res(rl("2", "2Gi"), rl("2", "2Gi"))}, v1.PodQOSGuaranteed},
		{"one container without limits", nil, []v1.ResourceRequirements{res(rl("1", "1Gi"), rl("1", "1Gi")), {}}, v1.PodQOSBurstable},
		{"requests below limits", nil, []v1.ResourceRequirements{res(rl("500m", "1Gi"), rl("1", "1Gi"))}, v1.PodQOSBurstable},
		{"cpu limit only", nil, []v1.ResourceRequirements{res(nil, rl("1", ""))}, v1.PodQOSBurstable},
		{"best-effort init container", []v1.ResourceRequirements{{}}, []v1.ResourceRequirements{res(rl("1", "1Gi"), rl("1", "1Gi"))}, v1.PodQOSBurstable},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := &v1.Pod{}
			for i, r := range tc.init {
				pod.Spec.InitContainers = append(pod.Spec.InitContainers, v1.Container{Name: "i" + string(rune('0'+i)), Resources: r})
			}
			for i, r := range tc.apps {
				pod.Spec.Containers = append(pod.Spec.Containers, v1.Container{Name: "c" + string(rune('0'+i)), Resources: r})
			}
			if got := criconfig.QOSClass(pod); got != tc.want {
				t.Errorf("qosClass = %s, want %s", got, tc.want)
			}
			if got := GenerateStatus(StatusInput{Pod: pod, Runtime: &runtime.PodStatus{}}).QOSClass; got != tc.want {
				t.Errorf("status.qosClass = %s, want %s", got, tc.want)
			}
		})
	}
}

type condView struct {
	Type           v1.PodConditionType
	Status         v1.ConditionStatus
	Reason, Detail string
}

func condViews(cs []v1.PodCondition) []condView {
	var out []condView
	for _, c := range cs {
		out = append(out, condView{c.Type, c.Status, c.Reason, c.Message})
	}
	return out
}

func TestGenerateStatusConditions(t *testing.T) {
	const (
		T = v1.ConditionTrue
		F = v1.ConditionFalse
	)
	notReady := "containers with unready status: [a b]"
	cases := []struct {
		name       string
		policy     v1.RestartPolicy
		init       bool
		sandboxes  []*runtime.SandboxStatus
		containers []*runtime.ContainerStatus
		want       []condView
	}{
		{name: "all running", sandboxes: readySandbox("10.0.0.1"),
			containers: []*runtime.ContainerStatus{rtRunning("a", "1", 0), rtRunning("b", "2", 0)},
			want: []condView{{v1.PodReadyToStartContainers, T, "", ""}, {v1.PodInitialized, T, "", ""},
				{v1.PodReady, T, "", ""}, {v1.ContainersReady, T, "", ""}, {v1.PodScheduled, T, "", ""}}},
		{name: "nothing started, no sandbox",
			want: []condView{{v1.PodReadyToStartContainers, F, "", ""}, {v1.PodInitialized, T, "", ""},
				{v1.PodReady, F, "ContainersNotReady", notReady}, {v1.ContainersReady, F, "ContainersNotReady", notReady},
				{v1.PodScheduled, T, "", ""}}},
		{name: "one container unready", sandboxes: readySandbox("10.0.0.1"),
			containers: []*runtime.ContainerStatus{rtRunning("a", "1", 0), rtExited("b", "2", 1, "")},
			want: []condView{{v1.PodReadyToStartContainers, T, "", ""}, {v1.PodInitialized, T, "", ""},
				{v1.PodReady, F, "ContainersNotReady", "containers with unready status: [b]"},
				{v1.ContainersReady, F, "ContainersNotReady", "containers with unready status: [b]"}, {v1.PodScheduled, T, "", ""}}},
		{name: "init containers pending", init: true, sandboxes: readySandbox("10.0.0.1"),
			containers: []*runtime.ContainerStatus{rtExited("i1", "1", 0, "")},
			want: []condView{{v1.PodReadyToStartContainers, T, "", ""},
				{v1.PodInitialized, F, "ContainersNotInitialized", "containers with incomplete status: [i2]"},
				{v1.PodReady, F, "ContainersNotReady", notReady}, {v1.ContainersReady, F, "ContainersNotReady", notReady},
				{v1.PodScheduled, T, "", ""}}},
		{name: "succeeded", policy: v1.RestartPolicyNever, sandboxes: readySandbox("10.0.0.1"),
			containers: []*runtime.ContainerStatus{rtExited("a", "1", 0, ""), rtExited("b", "2", 0, "")},
			want: []condView{{v1.PodReadyToStartContainers, T, "", ""}, {v1.PodInitialized, T, "PodCompleted", ""},
				{v1.PodReady, F, "PodCompleted", ""}, {v1.ContainersReady, F, "PodCompleted", ""}, {v1.PodScheduled, T, "", ""}}},
		{name: "failed", policy: v1.RestartPolicyNever, sandboxes: readySandbox("10.0.0.1"),
			containers: []*runtime.ContainerStatus{rtExited("a", "1", 0, ""), rtExited("b", "2", 1, "")},
			want: []condView{{v1.PodReadyToStartContainers, T, "", ""}, {v1.PodInitialized, T, "", ""},
				{v1.PodReady, F, "PodFailed", ""}, {v1.ContainersReady, F, "PodFailed", ""}, {v1.PodScheduled, T, "", ""}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := statusPod()
			if tc.policy != "" {
				pod.Spec.RestartPolicy = tc.policy
			}
			if tc.init {
				pod.Spec.InitContainers = []v1.Container{{Name: "i1"}, {Name: "i2"}}
			}
			st := &runtime.PodStatus{Sandboxes: tc.sandboxes, Containers: tc.containers}
			s := GenerateStatus(StatusInput{Pod: pod, Runtime: st, Now: stNow})
			if got := condViews(s.Conditions); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("conditions\n got: %+v\nwant: %+v", got, tc.want)
			}
			for _, c := range s.Conditions {
				if !c.LastTransitionTime.Time.Equal(stNow) {
					t.Errorf("%s lastTransitionTime = %v, want Now", c.Type, c.LastTransitionTime)
				}
			}
		})
	}
}

func TestGenerateStatusTransitionTimes(t *testing.T) {
	pod := statusPod()
	running := &runtime.PodStatus{Sandboxes: readySandbox("10.0.0.1"),
		Containers: []*runtime.ContainerStatus{rtRunning("a", "1", 0), rtRunning("b", "2", 0)}}
	first := GenerateStatus(StatusInput{Pod: pod, Runtime: running, Now: stStarted})
	// Same runtime state later: every transition time is kept.
	again := GenerateStatus(StatusInput{Pod: pod, Runtime: running, Old: &first, Now: stNow})
	for _, c := range again.Conditions {
		if !c.LastTransitionTime.Time.Equal(stStarted) {
			t.Errorf("unchanged %s: lastTransitionTime = %v, want %v", c.Type, c.LastTransitionTime, stStarted)
		}
	}
	// b exits: Ready and ContainersReady change, the others keep their time.
	crashed := &runtime.PodStatus{Sandboxes: running.Sandboxes,
		Containers: []*runtime.ContainerStatus{rtRunning("a", "1", 0), rtExited("b", "2", 1, "")}}
	changed := GenerateStatus(StatusInput{Pod: pod, Runtime: crashed, Old: &again, Now: stNow})
	for _, c := range changed.Conditions {
		want := stStarted
		if c.Type == v1.PodReady || c.Type == v1.ContainersReady {
			want = stNow
		}
		if !c.LastTransitionTime.Time.Equal(want) {
			t.Errorf("%s: lastTransitionTime = %v, want %v", c.Type, c.LastTransitionTime, want)
		}
	}
}

func TestGenerateStatusTerminalPhaseSticks(t *testing.T) {
	for _, old := range []v1.PodPhase{v1.PodSucceeded, v1.PodFailed} {
		t.Run(string(old), func(t *testing.T) {
			pod := statusPod()
			// Runtime objects reappearing (here: running again) must not revive the pod.
			st := &runtime.PodStatus{Sandboxes: readySandbox("10.0.0.1"),
				Containers: []*runtime.ContainerStatus{rtRunning("a", "1", 0), rtRunning("b", "2", 0)}}
			s := GenerateStatus(StatusInput{Pod: pod, Runtime: st, Old: &v1.PodStatus{Phase: old}, Terminal: true, Now: stNow})
			if s.Phase != old {
				t.Errorf("phase = %s, want %s", s.Phase, old)
			}
			for _, c := range s.ContainerStatuses {
				if c.Ready {
					t.Errorf("container %s ready in a terminal pod", c.Name)
				}
			}
		})
	}
	// A non-terminal old phase does move.
	pod := statusPod()
	st := &runtime.PodStatus{Sandboxes: readySandbox("10.0.0.1"),
		Containers: []*runtime.ContainerStatus{rtRunning("a", "1", 0), rtRunning("b", "2", 0)}}
	if s := GenerateStatus(StatusInput{Pod: pod, Runtime: st, Old: &v1.PodStatus{Phase: v1.PodPending}}); s.Phase != v1.PodRunning {
		t.Errorf("phase = %s, want Running", s.Phase)
	}
}

// Containers garbage collection removed keep their last terminated
// status; one removed while not terminated keeps its restarts and last
// state, as the kubelet's convertToAPIContainerStatuses.
func TestGenerateStatusRemovedContainers(t *testing.T) {
	pod := statusPod()
	term := v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 137, Reason: "Error", ContainerID: "containerd://1"}}
	old := &v1.PodStatus{Phase: v1.PodFailed, ContainerStatuses: []v1.ContainerStatus{
		{Name: "a", State: term, RestartCount: 2, ContainerID: "containerd://1"},
		{Name: "b", State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}, RestartCount: 3, LastTerminationState: term},
	}}
	s := GenerateStatus(StatusInput{Pod: pod, Runtime: &runtime.PodStatus{}, Old: old, Terminal: true, Now: stNow})
	if len(s.ContainerStatuses) != 2 {
		t.Fatalf("statuses %+v", s.ContainerStatuses)
	}
	if a := s.ContainerStatuses[0]; !reflect.DeepEqual(a, old.ContainerStatuses[0]) {
		t.Errorf("a = %+v, want the old terminated status", a)
	}
	b := s.ContainerStatuses[1]
	if b.State.Waiting == nil || b.State.Waiting.Reason != "ContainerCreating" || b.RestartCount != 3 || b.LastTerminationState.Terminated == nil {
		t.Errorf("b = %+v, want ContainerCreating with 3 restarts and the last termination", b)
	}
}

func TestGenerateStatusTerminationMessage(t *testing.T) {
	dir := t.TempDir()
	msgFile := filepath.Join(dir, "termination-log")
	if err := os.WriteFile(msgFile, []byte("goodbye"), 0o644); err != nil {
		t.Fatal(err)
	}
	logFile := filepath.Join(dir, "0.log")
	log := "2024-05-01T12:00:00Z stdout F starting\n" +
		"2024-05-01T12:00:01Z stderr P fatal: \n" +
		"2024-05-01T12:00:01Z stderr F disk full\n"
	if err := os.WriteFile(logFile, []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		policy v1.TerminationMessagePolicy
		mounts []*criv1.Mount
		code   int32
		want   string
	}{
		{"from the file", v1.TerminationMessageReadFile,
			[]*criv1.Mount{{ContainerPath: "/dev/termination-log", HostPath: msgFile}}, 0, "goodbye"},
		{"file wins over logs", v1.TerminationMessageFallbackToLogsOnError,
			[]*criv1.Mount{{ContainerPath: "/dev/termination-log", HostPath: msgFile}}, 1, "goodbye"},
		{"fallback to the log tail on error", v1.TerminationMessageFallbackToLogsOnError, nil, 1, "starting\nfatal: disk full\n"},
		{"no fallback on success", v1.TerminationMessageFallbackToLogsOnError, nil, 0, ""},
		{"no file, ReadFile policy", v1.TerminationMessageReadFile, nil, 1, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := statusPod()
			rc := rtExited("a", "c1", tc.code, "")
			rc.Mounts, rc.LogPath = tc.mounts, logFile
			rc.TerminationMessagePath, rc.TerminationMessagePolicy = "/dev/termination-log", string(tc.policy)
			st := &runtime.PodStatus{Sandboxes: readySandbox("10.0.0.1"), Containers: []*runtime.ContainerStatus{rc}}
			s := GenerateStatus(StatusInput{Pod: pod, Runtime: st, Now: stNow, TermMessage: readTerminationMessage})
			term := s.ContainerStatuses[0].State.Terminated
			if term == nil || term.Message != tc.want {
				t.Errorf("terminated = %+v, want message %q", term, tc.want)
			}
		})
	}
}

// Ready needs every readiness gate's condition True once the containers
// are ready, with the kubelet's reason and messages otherwise; the gates'
// conditions (set by others through the API) are kept in the status.
func TestGenerateStatusReadinessGates(t *testing.T) {
	const (
		T = v1.ConditionTrue
		F = v1.ConditionFalse
	)
	gate := func(t v1.PodConditionType, s v1.ConditionStatus) v1.PodCondition {
		return v1.PodCondition{Type: t, Status: s}
	}
	running := []*runtime.ContainerStatus{rtRunning("a", "1", 0), rtRunning("b", "2", 0)}
	cases := []struct {
		name       string
		gates      []v1.PodConditionType
		conds      []v1.PodCondition
		containers []*runtime.ContainerStatus
		ready      condView
	}{
		{name: "no gates", containers: running, ready: condView{v1.PodReady, T, "", ""}},
		{name: "gate condition missing", gates: []v1.PodConditionType{"example.com/ready"}, containers: running,
			ready: condView{v1.PodReady, F, "ReadinessGatesNotReady", `corresponding condition of pod readiness gate "example.com/ready" does not exist.`}},
		{name: "gate False", gates: []v1.PodConditionType{"example.com/ready"}, containers: running,
			conds: []v1.PodCondition{gate("example.com/ready", F)},
			ready: condView{v1.PodReady, F, "ReadinessGatesNotReady", `the status of pod readiness gate "example.com/ready" is not "True", but False`}},
		{name: "gate True", gates: []v1.PodConditionType{"example.com/ready"}, containers: running,
			conds: []v1.PodCondition{gate("example.com/ready", T)}, ready: condView{v1.PodReady, T, "", ""}},
		{name: "two gates, both reported", gates: []v1.PodConditionType{"example.com/a", "example.com/b"}, containers: running,
			conds: []v1.PodCondition{gate("example.com/a", "Unknown")},
			ready: condView{v1.PodReady, F, "ReadinessGatesNotReady",
				`the status of pod readiness gate "example.com/a" is not "True", but Unknown, corresponding condition of pod readiness gate "example.com/b" does not exist.`}},
		{name: "containers not ready come first", gates: []v1.PodConditionType{"example.com/ready"},
			conds:      []v1.PodCondition{gate("example.com/ready", T)},
			containers: []*runtime.ContainerStatus{rtRunning("a", "1", 0)},
			ready:      condView{v1.PodReady, F, "ContainersNotReady", "containers with unready status: [b]"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := statusPod()
			for _, g := range tc.gates {
				pod.Spec.ReadinessGates = append(pod.Spec.ReadinessGates, v1.PodReadinessGate{ConditionType: g})
			}
			// The API's copy of the kubelet's own conditions is not carried over.
			pod.Status.Conditions = append([]v1.PodCondition{gate(v1.PodReady, T)}, tc.conds...)
			st := &runtime.PodStatus{Sandboxes: readySandbox("10.0.0.1"), Containers: tc.containers}
			s := GenerateStatus(StatusInput{Pod: pod, Runtime: st, Now: stNow})
			views := condViews(s.Conditions)
			if got := views[2]; got != tc.ready {
				t.Errorf("Ready\n got: %+v\nwant: %+v", got, tc.ready)
			}
			if len(s.Conditions) != 5+len(tc.conds) || (len(tc.conds) > 0 && !reflect.DeepEqual(s.Conditions[5:], tc.conds)) {
				t.Errorf("conditions %+v, want the kubelet's five then %+v", s.Conditions, tc.conds)
			}
		})
	}
}
