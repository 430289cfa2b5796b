package podworker

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	critest "k8s.io/cri-api/pkg/apis/testing"
)

// fakeRuntimeClasses answers as the lister does: NotFound for a class it
// does not hold.
type fakeRuntimeClasses map[string]string // name → handler

func (f fakeRuntimeClasses) GetRuntimeClass(name string) (*nodev1.RuntimeClass, error) {
	h, ok := f[name]
	if !ok {
		return nil, apierrors.NewNotFound(nodev1.Resource("runtimeclass"), name)
	}
	return &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Handler: h}, nil
}

type failingRuntimeClasses struct{}

func (failingRuntimeClasses) GetRuntimeClass(string) (*nodev1.RuntimeClass, error) {
	return nil, errors.New("connection refused")
}

func withClass(pod *v1.Pod, class string) *v1.Pod {
	pod.Spec.RuntimeClassName = &class
	return pod
}

func TestRuntimeHandler(t *testing.T) {
	classes := fakeRuntimeClasses{"sandboxed": "crun"}
	empty := ""
	for _, tc := range []struct {
		name    string
		classes RuntimeClassGetter
		pod     *v1.Pod
		want    string
		wantErr string
	}{
		{"no class: the runtime's default", classes, scenarioPod("p"), "", ""},
		{"empty class: the default", classes, func() *v1.Pod { p := scenarioPod("p"); p.Spec.RuntimeClassName = &empty; return p }(), "", ""},
		{"the class's handler", classes, withClass(scenarioPod("p"), "sandboxed"), "crun", ""},
		{"missing class: the lister's NotFound", classes, withClass(scenarioPod("p"), "nosuch"), "", `runtimeclass.node.k8s.io "nosuch" not found`},
		{"lookup failure", failingRuntimeClasses{}, withClass(scenarioPod("p"), "sandboxed"), "", "failed to lookup RuntimeClass sandboxed: connection refused"},
		{"standalone", nil, withClass(scenarioPod("p"), "sandboxed"), "", "RuntimeClass sandboxed: " + errNoRuntimeClasses.Error()},
		{"standalone without a class", nil, scenarioPod("p"), "", ""},
	} {
		got, err := runtimeHandler(tc.classes, tc.pod)
		gotErr := ""
		if err != nil {
			gotErr = err.Error()
		}
		if got != tc.want || gotErr != tc.wantErr {
			t.Errorf("%s: %q, %q; want %q, %q", tc.name, got, gotErr, tc.want, tc.wantErr)
		}
	}
}

// reasonEvents keeps each event as "reason: message".
type reasonEvents struct {
	mu     sync.Mutex
	events []string
}

func (r *reasonEvents) Eventf(_ apiruntime.Object, _, reason, format string, args ...interface{}) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, reason+": "+fmt.Sprintf(format, args...))
}

func (r *reasonEvents) has(e string) (bool, string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Contains(r.events, e), strings.Join(r.events, "; ")
}

func startClassManager(t *testing.T, classes RuntimeClassGetter) (*harness, *reasonEvents) {
	t.Helper()
	rec := &reasonEvents{}
	h := &harness{rt: critest.NewFakeRuntimeService(), img: critest.NewFakeImageService(), pods: make(chan []*v1.Pod),
		logsDir: t.TempDir(), rootDir: t.TempDir()}
	m, err := New(Config{
		Runtime: h.rt, Images: h.img, NodeName: "node1", NodeIP: "192.0.2.1",
		RootDir: h.rootDir, PodLogsDir: h.logsDir, Logger: quietLogger(), Events: rec, RuntimeClasses: classes,
		ResyncPeriod: time.Hour, RetryPeriod: 20 * time.Millisecond, HousekeepingPeriod: time.Hour,
	})
	if err != nil {
		t.Fatal(err)
	}
	h.m = m
	h.start(t)
	return h, rec
}

// TestRuntimeClassSandbox: the class's handler goes with RunPodSandbox;
// a missing class or a handler the runtime does not know fails the
// sandbox with the kubelet's event, and the pod waits in ContainerCreating.
func TestRuntimeClassSandbox(t *testing.T) {
	h, rec := startClassManager(t, fakeRuntimeClasses{"sandboxed": "crun", "broken": "nosuch"})
	h.rt.InjectError("RunPodSandbox", status.Error(codes.Unknown, `failed to get sandbox runtime: no runtime for "nosuch" is configured`))
	broken := withClass(scenarioPod("broken", "busybox:1"), "broken")
	h.pods <- []*v1.Pod{broken}
	want := `FailedCreatePodSandBox: Failed to create pod sandbox: rpc error: code = Unknown desc = failed to get sandbox runtime: no runtime for "nosuch" is configured`
	eventually(t, "unknown handler event", func() (bool, string) { return rec.has(want) })

	runs := withClass(scenarioPod("runs", "busybox:1"), "sandboxed")
	missing := withClass(scenarioPod("missing", "busybox:1"), "nosuch")
	h.pods <- []*v1.Pod{broken, runs, missing}
	eventually(t, "pod with a class running", func() (bool, string) { return allRunning(h.pod(runs.UID)) })
	want = `FailedCreatePodSandBox: Failed to create pod sandbox: runtimeclass.node.k8s.io "nosuch" not found`
	eventually(t, "missing class event", func() (bool, string) { return rec.has(want) })

	h.rt.Lock()
	var handlers []string
	for _, sb := range h.rt.Sandboxes {
		handlers = append(handlers, sb.Metadata.Name+"="+sb.RuntimeHandler)
	}
	h.rt.Unlock()
	slices.Sort(handlers)
	// broken's retry got past the injected error: the fake knows no handlers.
	if !slices.Contains(handlers, "runs=crun") {
		t.Errorf("sandboxes %v, want runs=crun", handlers)
	}
	if slices.ContainsFunc(handlers, func(s string) bool { return strings.HasPrefix(s, "missing=") }) {
		t.Errorf("a sandbox for the pod whose class is missing: %v", handlers)
	}
	eventually(t, "missing's containers wait", func() (bool, string) {
		p := h.pod(missing.UID)
		if p == nil || len(p.Status.ContainerStatuses) == 0 {
			return false, "no status"
		}
		w := p.Status.ContainerStatuses[0].State.Waiting
		return p.Status.Phase == v1.PodPending && w != nil && w.Reason == "ContainerCreating", fmt.Sprintf("%+v", p.Status)
	})
}

// TestRuntimeClassStandalone: without an API server the class cannot be
// resolved, and the pod gets no sandbox.
func TestRuntimeClassStandalone(t *testing.T) {
	h, rec := startClassManager(t, nil)
	pod := withClass(scenarioPod("static", "busybox:1"), "sandboxed")
	h.pods <- []*v1.Pod{pod}
	want := "FailedCreatePodSandBox: Failed to create pod sandbox: RuntimeClass sandboxed: " + errNoRuntimeClasses.Error()
	eventually(t, "standalone event", func() (bool, string) { return rec.has(want) })
	if n := count(h.rt.GetCalls(), "RunPodSandbox"); n != 0 {
		t.Errorf("RunPodSandbox called %d times", n)
	}
}
