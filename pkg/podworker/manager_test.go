package podworker

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	criv1 "k8s.io/cri-api/pkg/apis/runtime/v1"
	critest "k8s.io/cri-api/pkg/apis/testing"

	"github.com/nodeagent/nodeagent/pkg/runtime"
)

// Scenario tests: a real Manager against the cri-api fakes. They wait for
// observable state with a generous deadline and never assert on timing.

const waitFor = 30 * time.Second

type harness struct {
	rt      *critest.FakeRuntimeService
	img     *critest.FakeImageService
	m       *Manager
	pods    chan []*v1.Pod
	events  chan runtime.PodEvent
	logsDir string
	rootDir string
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func newManager(t *testing.T, rt *critest.FakeRuntimeService, img *critest.FakeImageService) *harness {
	t.Helper()
	h := &harness{rt: rt, img: img, pods: make(chan []*v1.Pod), events: make(chan runtime.PodEvent),
		logsDir: t.TempDir(), rootDir: t.TempDir()}
	m, err := New(Config{
		Runtime: rt, Images: img, NodeName: "node1", NodeIP: "192.0.2.1",
		RootDir: h.rootDir, PodLogsDir: h.logsDir, Logger: quietLogger(),
		ResyncPeriod: time.Hour, RetryPeriod: 20 * time.Millisecond, HousekeepingPeriod: time.Hour,
		ContainerGCPeriod: time.Hour, // tests run collections themselves
	})
	if err != nil {
		t.Fatal(err)
	}
	h.m = m
	return h
}

// start runs the manager until the test ends.
func (h *harness) start(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.m.Run(ctx, h.pods, h.events) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
}

func startManager(t *testing.T) *harness {
	h := newManager(t, critest.NewFakeRuntimeService(), critest.NewFakeImageService())
	h.start(t)
	return h
}

func eventually(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(waitFor)
	for {
		ok, detail := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s; last seen: %s", what, detail)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func scenarioPod(name string, images ...string) *v1.Pod {
	pod := &v1.Pod{}
	pod.Name, pod.Namespace, pod.UID = name, "default", types.UID("uid-"+name)
	pod.Spec.RestartPolicy = v1.RestartPolicyAlways
	pod.Spec.DNSPolicy = v1.DNSDefault
	for i, img := range images {
		pod.Spec.Containers = append(pod.Spec.Containers, v1.Container{
			Name: fmt.Sprintf("c%d", i), Image: img, ImagePullPolicy: v1.PullIfNotPresent,
			TerminationMessagePath: "/dev/termination-log", TerminationMessagePolicy: v1.TerminationMessageReadFile,
		})
	}
	return pod
}

func (h *harness) pod(uid types.UID) *v1.Pod {
	for _, p := range h.m.Pods() {
		if p.UID == uid {
			return p
		}
	}
	return nil
}

func count(calls []string, name string) int {
	n := 0
	for _, c := range calls {
		if c == name {
			n++
		}
	}
	return n
}

func (h *harness) runtimeObjects() (sandboxes, containers []string) {
	h.rt.Lock()
	defer h.rt.Unlock()
	for id := range h.rt.Sandboxes {
		sandboxes = append(sandboxes, id)
	}
	for id, c := range h.rt.Containers {
		containers = append(containers, fmt.Sprintf("%s=%s", id, c.State))
	}
	sort.Strings(sandboxes)
	sort.Strings(containers)
	return sandboxes, containers
}

// exitContainer makes a fake container exit as if its process ended.
func (h *harness) exitContainer(t *testing.T, id string, code int32) {
	t.Helper()
	h.rt.Lock()
	defer h.rt.Unlock()
	c, ok := h.rt.Containers[id]
	if !ok {
		t.Fatalf("no container %s", id)
	}
	c.State, c.ExitCode, c.FinishedAt = criv1.ContainerState_CONTAINER_EXITED, code, time.Now().UnixNano()
}

func allRunning(p *v1.Pod) (bool, string) {
	if p == nil {
		return false, "pod not listed"
	}
	if p.Status.Phase != v1.PodRunning {
		return false, fmt.Sprintf("phase %q, statuses %+v", p.Status.Phase, p.Status.ContainerStatuses)
	}
	for _, c := range p.Status.ContainerStatuses {
		if c.State.Running == nil {
			return false, fmt.Sprintf("%s not running: %+v", c.Name, c.State)
		}
	}
	return true, ""
}

func TestManagerStartsPod(t *testing.T) {
	h := startManager(t)
	pod := scenarioPod("web", "busybox:1", "alpine:3")
	h.pods <- []*v1.Pod{pod}
	eventually(t, "pod running", func() (bool, string) { return allRunning(h.pod(pod.UID)) })

	select {
	case <-h.m.Ready():
	case <-time.After(waitFor):
		t.Fatal("Ready() not closed after the first pod set synced")
	}
	calls := h.rt.GetCalls()
	if count(calls, "RunPodSandbox") != 1 || count(calls, "CreateContainer") != 2 || count(calls, "StartContainer") != 2 {
		t.Errorf("runtime calls = %v", calls)
	}
	h.img.Lock()
	pulls := count(h.img.Called, "PullImage")
	h.img.Unlock()
	if pulls != 2 {
		t.Errorf("pulls = %d, want 2", pulls)
	}

	sandboxID := critest.BuildSandboxName(&criv1.PodSandboxMetadata{Name: "web", Namespace: "default", Uid: "uid-web"})
	got := h.pod(pod.UID)
	if got.Status.PodIP != critest.FakePodSandboxIPs[0] || got.Status.HostIP != "192.0.2.1" || got.Status.StartTime == nil {
		t.Errorf("podIP/hostIP/startTime = %q/%q/%v", got.Status.PodIP, got.Status.HostIP, got.Status.StartTime)
	}
	for i, cs := range got.Status.ContainerStatuses {
		wantID := "containerd://" + critest.BuildContainerName(&criv1.ContainerMetadata{Name: fmt.Sprintf("c%d", i)}, sandboxID)
		if cs.ContainerID != wantID || !cs.Ready || cs.RestartCount != 0 {
			t.Errorf("container %s: id=%q ready=%v restarts=%d, want id %q", cs.Name, cs.ContainerID, cs.Ready, cs.RestartCount, wantID)
		}
	}
	for _, c := range got.Status.Conditions {
		if c.Status != v1.ConditionTrue {
			t.Errorf("condition %s = %s (%s)", c.Type, c.Status, c.Message)
		}
	}

	// The runtime objects carry the kubelet's labels; the pod's directories exist.
	h.rt.Lock()
	sb := h.rt.Sandboxes[sandboxID]
	var sbLabels map[string]string
	if sb != nil {
		sbLabels = sb.Labels
	}
	h.rt.Unlock()
	if ref, ok := runtime.PodRefFromLabels(sbLabels); !ok || ref.UID != pod.UID || ref.Name != "web" {
		t.Errorf("sandbox labels = %v", sbLabels)
	}
	if _, err := os.Stat(runtime.PodLogsDir(h.logsDir, "default", "web", pod.UID)); err != nil {
		t.Errorf("pod log dir: %v", err)
	}
	hosts, err := os.ReadFile(filepath.Join(h.rootDir, "pods", string(pod.UID), "etc-hosts"))
	if err != nil || !strings.Contains(string(hosts), critest.FakePodSandboxIPs[0]+"\tweb") {
		t.Errorf("etc-hosts = %q, %v", hosts, err)
	}
}

func TestManagerRemovesPod(t *testing.T) {
	h := startManager(t)
	pod := scenarioPod("gone", "busybox:1", "alpine:3")
	h.pods <- []*v1.Pod{pod}
	eventually(t, "pod running", func() (bool, string) { return allRunning(h.pod(pod.UID)) })

	h.pods <- nil
	eventually(t, "runtime objects removed", func() (bool, string) {
		sbs, cs := h.runtimeObjects()
		return len(sbs) == 0 && len(cs) == 0, fmt.Sprintf("sandboxes %v containers %v", sbs, cs)
	})
	calls := h.rt.GetCalls()
	if count(calls, "StopContainer") != 2 || count(calls, "StopPodSandbox") < 1 ||
		count(calls, "RemoveContainer") != 2 || count(calls, "RemovePodSandbox") < 1 {
		t.Errorf("runtime calls = %v", calls)
	}
	lastStop, firstSandboxStop := -1, -1
	for i, c := range calls {
		if c == "StopContainer" {
			lastStop = i
		}
		if c == "StopPodSandbox" && firstSandboxStop < 0 {
			firstSandboxStop = i
		}
	}
	if lastStop > firstSandboxStop {
		t.Errorf("containers must stop before the sandbox: %v", calls)
	}
	if len(h.m.Pods()) != 0 {
		t.Errorf("Pods() = %v, want none", h.m.Pods())
	}
	eventually(t, "pod directories removed", func() (bool, string) {
		_, err1 := os.Stat(runtime.PodLogsDir(h.logsDir, "default", "gone", pod.UID))
		_, err2 := os.Stat(filepath.Join(h.rootDir, "pods", string(pod.UID)))
		return os.IsNotExist(err1) && os.IsNotExist(err2), fmt.Sprintf("%v / %v", err1, err2)
	})
}

func TestManagerHousekeepingRemovesUnknownPods(t *testing.T) {
	rt := critest.NewFakeRuntimeService()
	ctx := context.Background()
	// Left behind by an earlier run: a kubelet-labelled sandbox with a running container.
	orphan := scenarioPod("orphan", "busybox:1")
	sbCfg := &criv1.PodSandboxConfig{
		Metadata: &criv1.PodSandboxMetadata{Name: "orphan", Namespace: "default", Uid: string(orphan.UID)},
		Labels:   runtime.SandboxLabels(orphan),
	}
	sbID, err := rt.RunPodSandbox(ctx, sbCfg, "")
	if err != nil {
		t.Fatal(err)
	}
	cID, err := rt.CreateContainer(ctx, sbID, &criv1.ContainerConfig{
		Metadata: &criv1.ContainerMetadata{Name: "c0"}, Image: &criv1.ImageSpec{Image: "busybox:1"},
		Labels: runtime.ContainerLabels(orphan, &orphan.Spec.Containers[0]),
	}, sbCfg)
	if err != nil || rt.StartContainer(ctx, cID) != nil {
		t.Fatal(err)
	}
	// Not created by a kubelet-compatible agent: left alone.
	foreign, err := rt.RunPodSandbox(ctx, &criv1.PodSandboxConfig{
		Metadata: &criv1.PodSandboxMetadata{Name: "foreign", Namespace: "other", Uid: "x"},
	}, "")
	if err != nil {
		t.Fatal(err)
	}

	h := newManager(t, rt, critest.NewFakeImageService())
	h.start(t)
	h.pods <- nil // the first pod set triggers housekeeping
	eventually(t, "orphan removed", func() (bool, string) {
		sbs, cs := h.runtimeObjects()
		return len(cs) == 0 && len(sbs) == 1 && sbs[0] == foreign, fmt.Sprintf("sandboxes %v containers %v", sbs, cs)
	})
	calls := rt.GetCalls()
	if count(calls, "StopContainer") != 1 || count(calls, "StopPodSandbox") != 1 {
		t.Errorf("the orphan must be stopped before removal: %v", calls)
	}
}

func TestManagerErrImageNeverPull(t *testing.T) {
	h := startManager(t)
	pod := scenarioPod("never", "local/app:1")
	pod.Spec.Containers[0].ImagePullPolicy = v1.PullNever
	h.pods <- []*v1.Pod{pod}
	var last v1.ContainerStatus
	eventually(t, "ErrImageNeverPull", func() (bool, string) {
		p := h.pod(pod.UID)
		if p == nil || len(p.Status.ContainerStatuses) == 0 {
			return false, "no status"
		}
		last = p.Status.ContainerStatuses[0]
		w := last.State.Waiting
		return w != nil && w.Reason == ReasonErrImageNeverPull && p.Status.Phase == v1.PodPending,
			fmt.Sprintf("phase %s state %+v", p.Status.Phase, last.State)
	})
	if want := `Container image "local/app:1" is not present with pull policy of Never`; last.State.Waiting.Message != want {
		t.Errorf("message = %q, want %q", last.State.Waiting.Message, want)
	}
	calls := h.rt.GetCalls()
	h.img.Lock()
	pulls := count(h.img.Called, "PullImage")
	h.img.Unlock()
	if count(calls, "CreateContainer") != 0 || pulls != 0 {
		t.Errorf("no container may be created nor image pulled: runtime %v, pulls %d", calls, pulls)
	}
}

func TestManagerRestartsCrashedContainer(t *testing.T) {
	h := startManager(t)
	pod := scenarioPod("crash", "busybox:1")
	h.pods <- []*v1.Pod{pod}
	eventually(t, "pod running", func() (bool, string) { return allRunning(h.pod(pod.UID)) })
	sandboxID := critest.BuildSandboxName(&criv1.PodSandboxMetadata{Name: "crash", Namespace: "default", Uid: "uid-crash"})
	attempt := func(n uint32) string {
		return critest.BuildContainerName(&criv1.ContainerMetadata{Name: "c0", Attempt: n}, sandboxID)
	}

	// First crash: no back-off yet, the container restarts with restartCount 1.
	h.exitContainer(t, attempt(0), 1)
	h.events <- runtime.PodEvent{UID: pod.UID}
	eventually(t, "restart", func() (bool, string) {
		p := h.pod(pod.UID)
		ok, detail := allRunning(p)
		return ok && p.Status.ContainerStatuses[0].RestartCount == 1, detail
	})

	// Second crash: the restart is backing off.
	h.exitContainer(t, attempt(1), 2)
	h.events <- runtime.PodEvent{UID: pod.UID}
	eventually(t, "CrashLoopBackOff", func() (bool, string) {
		p := h.pod(pod.UID)
		cs := p.Status.ContainerStatuses[0]
		return cs.State.Waiting != nil && cs.State.Waiting.Reason == "CrashLoopBackOff" &&
				cs.LastTerminationState.Terminated != nil && cs.LastTerminationState.Terminated.ExitCode == 2,
			fmt.Sprintf("%+v", cs)
	})
}

// TestCollectGarbageKeepsLastDeadContainer drives one worker's garbage
// collection directly against the fake runtime.
func TestCollectGarbageKeepsLastDeadContainer(t *testing.T) {
	ctx := context.Background()
	rt := critest.NewFakeRuntimeService()
	h := newManager(t, rt, critest.NewFakeImageService())
	pod := scenarioPod("gc", "busybox:1")
	labels := runtime.ContainerLabels(pod, &pod.Spec.Containers[0])

	mkSandbox := func(attempt uint32, created int64, ready bool) string {
		cfg := &criv1.PodSandboxConfig{Metadata: &criv1.PodSandboxMetadata{Name: "gc", Namespace: "default",
			Uid: string(pod.UID), Attempt: attempt}, Labels: runtime.SandboxLabels(pod)}
		id, err := rt.RunPodSandbox(ctx, cfg, "")
		if err != nil {
			t.Fatal(err)
		}
		rt.Lock()
		rt.Sandboxes[id].CreatedAt = created
		if !ready {
			rt.Sandboxes[id].State = criv1.PodSandboxState_SANDBOX_NOTREADY
		}
		rt.Unlock()
		return id
	}
	mkContainer := func(sb string, attempt uint32, created int64, running bool) string {
		id, err := rt.CreateContainer(ctx, sb, &criv1.ContainerConfig{Metadata: &criv1.ContainerMetadata{Name: "c0", Attempt: attempt},
			Image: &criv1.ImageSpec{Image: "busybox:1"}, Labels: labels}, nil)
		if err != nil {
			t.Fatal(err)
		}
		rt.Lock()
		c := rt.Containers[id]
		c.CreatedAt = created
		c.State = criv1.ContainerState_CONTAINER_EXITED
		if running {
			c.State = criv1.ContainerState_CONTAINER_RUNNING
		}
		rt.Unlock()
		return id
	}
	oldSandbox := mkSandbox(0, 100, false)
	sb := mkSandbox(1, 200, true)
	c0 := mkContainer(sb, 0, 300, false)
	c1 := mkContainer(sb, 1, 400, false)
	c2 := mkContainer(sb, 2, 500, true)

	st, err := runtime.GetPodStatus(ctx, rt, runtime.PodRef{UID: pod.UID, Name: pod.Name, Namespace: pod.Namespace})
	if err != nil {
		t.Fatal(err)
	}
	newWorker(h.m.workerDeps(), pod).collectGarbage(ctx, st)

	sbs, cs := h.runtimeObjects()
	if len(sbs) != 1 || sbs[0] != sb {
		t.Errorf("sandboxes = %v, want only %s (%s is dead and unused)", sbs, sb, oldSandbox)
	}
	running := fmt.Sprintf("%s=%s", c2, criv1.ContainerState_CONTAINER_RUNNING)
	lastDead := fmt.Sprintf("%s=%s", c1, criv1.ContainerState_CONTAINER_EXITED)
	has := func(s string) bool {
		for _, c := range cs {
			if c == s {
				return true
			}
		}
		return false
	}
	if !has(running) {
		t.Fatalf("running container removed: %v", cs)
	}
	for _, c := range cs {
		if strings.HasPrefix(c, c0+"=") {
			t.Errorf("oldest dead container %s kept: %v", c0, cs)
		}
	}
	if !has(lastDead) {
		t.Errorf("the newest dead container %s must be kept (MaxPerPodContainer=1): %v", c1, cs)
	}
}
