package podworker

import (
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	criv1 "k8s.io/cri-api/pkg/apis/runtime/v1"
	critest "k8s.io/cri-api/pkg/apis/testing"

	"github.com/nodeagent/nodeagent/pkg/podtrace"
	"github.com/nodeagent/nodeagent/pkg/runtime"
)

func traceNames(tr podtrace.Trace) []string {
	var out []string
	for _, s := range tr.Steps {
		out = append(out, strings.TrimSpace(s.Name+" "+s.Container))
	}
	return out
}

// TestWorkerTracesAPodsStart checks that the steps of a start are
// recorded in the order they happen, then kept once the pod is gone.
func TestWorkerTracesAPodsStart(t *testing.T) {
	h := newManager(t, critest.NewFakeRuntimeService(), critest.NewFakeImageService())
	traces := podtrace.New(podtrace.Config{})
	h.m.cfg.Tracer, h.m.puller.tracer = traces, traces
	h.start(t)
	pod := scenarioPod("traced", "busybox:1")
	pod.Spec.InitContainers = []v1.Container{{Name: "init", Image: "busybox:1", ImagePullPolicy: v1.PullIfNotPresent,
		TerminationMessagePath: "/dev/termination-log", TerminationMessagePolicy: v1.TerminationMessageReadFile}}
	h.pods <- []*v1.Pod{pod}
	sandboxID := critest.BuildSandboxName(&criv1.PodSandboxMetadata{Name: "traced", Namespace: "default", Uid: "uid-traced"})
	initID := critest.BuildContainerName(&criv1.ContainerMetadata{Name: "init"}, sandboxID)
	eventually(t, "the init container", func() (bool, string) {
		_, cs := h.runtimeObjects()
		return strings.Contains(fmt.Sprint(cs), initID+"=CONTAINER_RUNNING"), fmt.Sprint(cs)
	})
	h.exitContainer(t, initID, 0)
	h.events <- runtime.PodEvent{UID: pod.UID}
	eventually(t, "pod running", func() (bool, string) { return allRunning(h.pod(pod.UID)) })
	eventually(t, "c0 ready in the trace", func() (bool, string) {
		tr, _ := traces.Get("default", "traced", "")
		names := traceNames(tr)
		return len(names) > 0 && names[len(names)-1] == "ContainerReady c0", fmt.Sprint(names)
	})
	tr, _ := traces.Get("default", "traced", pod.UID)
	want := []string{"Seen", "Admit", "RunPodSandbox", "PullImage init", "CreateContainer init", "StartContainer init",
		"InitContainerRun init", "PullImage c0", "CreateContainer c0", "StartContainer c0", "ContainerReady c0"}
	if got := traceNames(tr); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("steps\n%v\nwant\n%v", got, want)
	}
	for _, s := range tr.Steps {
		if s.End.Before(s.Start) || s.Error != "" {
			t.Errorf("step %+v", s)
		}
	}
	if s := tr.Steps[3]; !strings.Contains(s.Detail, "pulled") || s.Attrs["cache.hit"] != "false" {
		t.Errorf("first pull %+v", s)
	}
	if s := tr.Steps[7]; !strings.Contains(s.Detail, "present (cache hit)") {
		t.Errorf("second use of the image %+v", s)
	}

	h.pods <- nil
	eventually(t, "the pod gone", func() (bool, string) {
		sbs, _ := h.runtimeObjects()
		return len(sbs) == 0, fmt.Sprint(sbs)
	})
	if _, ok := traces.Get("default", "traced", ""); !ok {
		t.Error("the trace went with the pod; it should stay for the retention")
	}
}

func TestAdmissionTracesTheRejection(t *testing.T) {
	traces := podtrace.New(podtrace.Config{})
	pod := scenarioPod("big", "busybox:1")
	traceAdmission(traces, t0(), t0().Add(time.Millisecond), pod, AdmitResult{Reason: "OutOfcpu", Message: "Node didn't have enough resource: cpu"})
	tr, _ := traces.Get("default", "big", "")
	if len(tr.Steps) != 1 || tr.Steps[0].Error != "OutOfcpu: Node didn't have enough resource: cpu" || tr.Steps[0].Detail != "rejected" {
		t.Errorf("steps %+v", tr.Steps)
	}
}

func t0() time.Time { return time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC) }

func TestSandboxStepShowsTheRuntimesCreationTime(t *testing.T) {
	pod := scenarioPod("web", "busybox:1")
	start := t0()
	st := &criv1.PodSandboxStatus{CreatedAt: start.Add(400 * time.Millisecond).UnixNano(),
		Network: &criv1.PodSandboxNetworkStatus{Ip: "10.0.0.5"}}
	s := sandboxStep(pod, start, start.Add(700*time.Millisecond), "0123456789abcdef", st)
	if s.Attrs["sandbox.created.offset"] != "400ms" || !strings.Contains(s.Detail, "sandbox 0123456789abc, IP 10.0.0.5; runtime's createdAt at +400ms") {
		t.Errorf("step %+v", s)
	}
	pod.Spec.HostNetwork = true
	if s := sandboxStep(pod, start, start.Add(time.Second), "x", st); !strings.Contains(s.Detail, "host network") || s.Attrs["sandbox.created.offset"] != "" {
		t.Errorf("host network step %+v", s)
	}
}
