package podworker

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	criv1 "k8s.io/cri-api/pkg/apis/runtime/v1"
	critest "k8s.io/cri-api/pkg/apis/testing"

	"github.com/nodeagent/nodeagent/pkg/podtrace"
	"github.com/nodeagent/nodeagent/pkg/runtime"
	"github.com/nodeagent/nodeagent/pkg/volume"
)

// flakyVolumes fails SetUpPod until fail reaches 0.
type flakyVolumes struct {
	mu    sync.Mutex
	fail  int
	calls []time.Time
}

func (f *flakyVolumes) SetUpPod(_ context.Context, pod *v1.Pod, _ []string) (map[string]volume.Mounted, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, time.Now())
	if f.fail > 0 {
		f.fail--
		return nil, &volume.SetUpError{Failed: []string{"data"}, Messages: map[string]string{"data": `MountVolume.SetUp failed for volume "data" : not yet`}}
	}
	return map[string]volume.Mounted{"data": {HostPath: "/srv/data"}}, nil
}

func (f *flakyVolumes) TearDownPod(types.UID) error             { return nil }
func (f *flakyVolumes) CleanupOrphans(map[types.UID]bool) error { return nil }
func (f *flakyVolumes) state() (int, []time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.fail, append([]time.Time(nil), f.calls...)
}

// A pod whose volumes fail to set up waits in ContainerCreating, is
// retried with back-off (not every retry period), and starts once the
// volumes are there.
func TestVolumeSetUpIsRetriedWithBackoff(t *testing.T) {
	h := newManager(t, critest.NewFakeRuntimeService(), critest.NewFakeImageService())
	vols := &flakyVolumes{fail: 3}
	h.m.cfg.Volumes = vols
	h.start(t)
	pod := scenarioPod("vols", "busybox:1")
	pod.Spec.Volumes = []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}}
	pod.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "data", MountPath: "/data"}}
	h.pods <- []*v1.Pod{pod}
	eventually(t, "the container running after the volumes came", func() (bool, string) {
		p := h.pod(pod.UID)
		if p == nil || len(p.Status.ContainerStatuses) == 0 {
			return false, "no status"
		}
		return p.Status.ContainerStatuses[0].State.Running != nil, fmt.Sprintf("%+v", p.Status.ContainerStatuses[0].State)
	})
	// The retry period is 20 ms; the back-off spaces the attempts by at
	// least 0.5 s, 1 s and 2 s (lower bounds: a slow machine only widens
	// them).
	fail, calls := vols.state()
	if fail != 0 || len(calls) < 4 {
		t.Fatalf("%d attempts, %d failures left", len(calls), fail)
	}
	for i, min := range []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second} {
		if gap := calls[i+1].Sub(calls[i]); gap < min-50*time.Millisecond {
			t.Errorf("attempt %d came %s after the previous failure, want at least %s", i+2, gap, min)
		}
	}
}

func TestMountsVolumes(t *testing.T) {
	none := Plan{InitToStart: -1}
	cases := []struct {
		name string
		plan Plan
		want bool
	}{
		{"nothing to do", none, false},
		{"kills only", Plan{InitToStart: -1, ContainersToKill: map[string]KillReason{"id": {Name: "c"}}}, false},
		{"new sandbox", Plan{InitToStart: -1, CreateSandbox: true}, true},
		{"init container", Plan{InitToStart: 0}, true},
		{"app container", Plan{InitToStart: -1, ContainersToStart: []int{0}}, true},
		{"sidecar", Plan{InitToStart: -1, SidecarsToStart: []int{0}}, true},
		{"ephemeral container", Plan{InitToStart: -1, EphemeralToStart: []int{0}}, true},
	}
	for _, tc := range cases {
		if got := mountsVolumes(tc.plan); got != tc.want {
			t.Errorf("%s: mountsVolumes = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestVolumePodIPs(t *testing.T) {
	ready := &runtime.PodStatus{Sandboxes: []*runtime.SandboxStatus{{State: criv1.PodSandboxState_SANDBOX_READY, IPs: []string{"10.0.0.5"}}}}
	pod := scenarioPod("ips", "busybox:1")
	host := scenarioPod("host", "busybox:1")
	host.Spec.HostNetwork = true
	cases := []struct {
		name string
		pod  *v1.Pod
		st   *runtime.PodStatus
		plan Plan
		want []string
	}{
		{"first start: no sandbox yet", pod, &runtime.PodStatus{}, Plan{CreateSandbox: true}, nil},
		{"running sandbox", pod, ready, Plan{ContainersToStart: []int{0}}, []string{"10.0.0.5"}},
		{"sandbox to be replaced", pod, ready, Plan{KillPod: true, CreateSandbox: true}, nil},
		{"hostNetwork", host, &runtime.PodStatus{}, Plan{CreateSandbox: true}, []string{"192.0.2.1"}},
	}
	for _, tc := range cases {
		if got := volumePodIPs(tc.pod, "192.0.2.1", tc.st, tc.plan); fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// As upstream's SyncPod waits for the pod's volumes before the runtime
// acts, a pod whose mount fails gets no sandbox: it waits in
// ContainerCreating with the FailedMount event.
func TestFailingMountKeepsThePodWithoutSandbox(t *testing.T) {
	h := newManager(t, critest.NewFakeRuntimeService(), critest.NewFakeImageService())
	events := &netEvents{}
	h.m.events, h.m.cfg.Events = events, events
	vols := &flakyVolumes{fail: 2}
	h.m.cfg.Volumes = vols
	h.start(t)
	pod := scenarioPod("nomount", "busybox:1")
	pod.Spec.Volumes = []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}}
	h.pods <- []*v1.Pod{pod}
	eventually(t, "the FailedMount event", func() (bool, string) {
		events.mu.Lock()
		defer events.mu.Unlock()
		return slices.Contains(events.seen, `FailedMount: MountVolume.SetUp failed for volume "data" : not yet`), fmt.Sprint(events.seen)
	})
	if n := count(h.rt.GetCalls(), "RunPodSandbox"); n != 0 {
		t.Errorf("RunPodSandbox called %d times while the volume failed", n)
	}
	got := h.pod(pod.UID)
	if got == nil || len(got.Status.ContainerStatuses) != 1 || got.Status.ContainerStatuses[0].State.Waiting == nil ||
		got.Status.ContainerStatuses[0].State.Waiting.Reason != "ContainerCreating" {
		t.Fatalf("pod waiting for its volume: %+v", got)
	}
	eventually(t, "the pod running once the volume is there", func() (bool, string) { return allRunning(h.pod(pod.UID)) })
	if fail, _ := vols.state(); fail != 0 {
		t.Errorf("%d failures left", fail)
	}
	if n := count(h.rt.GetCalls(), "RunPodSandbox"); n != 1 {
		t.Errorf("RunPodSandbox called %d times, want 1", n)
	}
}

// The trace shows the volumes set up before the sandbox, in the order the
// worker now runs them (the kubelet's).
func TestTraceShowsVolumesBeforeTheSandbox(t *testing.T) {
	h := newManager(t, critest.NewFakeRuntimeService(), critest.NewFakeImageService())
	traces := podtrace.New(podtrace.Config{})
	h.m.cfg.Tracer, h.m.puller.tracer = traces, traces
	host := volume.Host{RootDir: h.rootDir, NodeName: "node1"}
	h.m.cfg.Volumes = volume.NewManager(host, volume.DefaultPlugins(host), quietLogger())
	h.start(t)
	pod := scenarioPod("volfirst", "busybox:1")
	pod.Spec.Volumes = []v1.Volume{{Name: "info", VolumeSource: v1.VolumeSource{DownwardAPI: &v1.DownwardAPIVolumeSource{
		Items: []v1.DownwardAPIVolumeFile{{Path: "name", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}}}}}}}
	pod.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "info", MountPath: "/info"}}
	h.pods <- []*v1.Pod{pod}
	eventually(t, "pod running", func() (bool, string) { return allRunning(h.pod(pod.UID)) })
	eventually(t, "c0 ready in the trace", func() (bool, string) {
		tr, _ := traces.Get("default", "volfirst", "")
		names := traceNames(tr)
		return len(names) > 0 && names[len(names)-1] == "ContainerReady c0", fmt.Sprint(names)
	})
	tr, _ := traces.Get("default", "volfirst", pod.UID)
	want := []string{"Seen", "Admit", "SetUpVolume", "RunPodSandbox", "PullImage c0", "CreateContainer c0", "StartContainer c0", "ContainerReady c0"}
	if got := traceNames(tr); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("steps\n%v\nwant\n%v", got, want)
	}
	for i := 1; i < len(tr.Steps); i++ {
		if tr.Steps[i].Start.Before(tr.Steps[i-1].Start) {
			t.Errorf("step %s starts before %s", tr.Steps[i].Name, tr.Steps[i-1].Name)
		}
	}
	h.pods <- nil
	eventually(t, "the pod gone", func() (bool, string) {
		sbs, _ := h.runtimeObjects()
		return len(sbs) == 0, fmt.Sprint(sbs)
	})
}
