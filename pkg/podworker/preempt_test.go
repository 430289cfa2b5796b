package podworker

import (
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	critest "k8s.io/cri-api/pkg/apis/testing"
)

func staticPod(name string, priority *int32) *v1.Pod {
	p := scenarioPod(name, "busybox:1")
	p.Annotations = map[string]string{"kubernetes.io/config.source": "file"}
	p.Spec.Priority = priority
	grace := int64(1)
	p.Spec.TerminationGracePeriodSeconds = &grace
	return p
}

func int32p(v int32) *int32 { return &v }

// A static pod that finds the node full preempts a pod of lower priority,
// as the kubelet's critical pod admission handler does: the victim gets a
// Preempting warning, is stopped and reported Failed with the
// DisruptionTarget condition, and only then does the critical pod start.
func TestManagerPreemptsForCriticalPod(t *testing.T) {
	h := newManager(t, critest.NewFakeRuntimeService(), critest.NewFakeImageService())
	h.m.cfg.Allocatable = v1.ResourceList{v1.ResourcePods: resource.MustParse("1")}
	ev := &recordedEvents{}
	h.m.events = ev
	statuses := &statusLog{}
	h.m.cfg.OnStatus = statuses.record
	rec := newRecordingMetrics()
	h.m.cfg.Metrics = rec
	h.start(t)

	low, high := staticPod("low", int32p(10)), staticPod("high", int32p(100))
	h.pods <- []*v1.Pod{low}
	eventually(t, "low running", func() (bool, string) { return allRunning(h.pod(low.UID)) })
	h.pods <- []*v1.Pod{low, high}
	eventually(t, "high running", func() (bool, string) { return allRunning(h.pod(high.UID)) })

	p := h.pod(low.UID)
	if p.Status.Phase != v1.PodFailed || p.Status.Reason != "Preempting" || p.Status.Message != "Preempted in order to admit critical pod" {
		t.Errorf("low status %s %s %q", p.Status.Phase, p.Status.Reason, p.Status.Message)
	}
	var dt *v1.PodCondition
	for i, c := range p.Status.Conditions {
		if c.Type == v1.DisruptionTarget {
			dt = &p.Status.Conditions[i]
		}
	}
	if dt == nil || dt.Status != v1.ConditionTrue || dt.Reason != "TerminationByKubelet" || dt.Message != "Pod was preempted by Kubelet to accommodate a critical pod." {
		t.Errorf("DisruptionTarget = %+v", dt)
	}
	for _, cs := range p.Status.ContainerStatuses {
		if cs.State.Terminated == nil {
			t.Errorf("low container %s not terminated: %+v", cs.Name, cs.State)
		}
	}
	// The victim was stopped before the critical pod's sandbox was made.
	calls := h.rt.GetCalls()
	stop, run := -1, -1
	for i, c := range calls {
		switch c {
		case "StopPodSandbox":
			if stop < 0 {
				stop = i
			}
		case "RunPodSandbox":
			run = i // the last: high's
		}
	}
	if stop < 0 || stop > run {
		t.Errorf("low's sandbox not stopped before high's was run: %v", calls)
	}
	ev.mu.Lock()
	if n := count(ev.reasons, "Preempting"); n != 1 {
		t.Errorf("Preempting events = %d, want 1: %v", n, ev.reasons)
	}
	ev.mu.Unlock()
	rec.mu.Lock()
	if fmt.Sprint(rec.preempted) != "[pods]" {
		t.Errorf("preemptions = %v, want [pods]", rec.preempted)
	}
	rec.mu.Unlock()

	// Staying in the pod set, the victim is not started again.
	h.pods <- []*v1.Pod{low, high}
	h.pods <- []*v1.Pod{low, high} // received once the previous set was handled
	if p := h.pod(low.UID); p.Status.Phase != v1.PodFailed {
		t.Errorf("low came back: %s", p.Status.Phase)
	}
}

// A critical pod with nothing it may preempt is rejected with the
// predicate handler's UnexpectedAdmissionError.
func TestManagerCriticalPodWithoutVictims(t *testing.T) {
	h := newManager(t, critest.NewFakeRuntimeService(), critest.NewFakeImageService())
	h.m.cfg.Allocatable = v1.ResourceList{v1.ResourcePods: resource.MustParse("1")}
	h.start(t)

	first, second := staticPod("first", nil), staticPod("second", nil)
	h.pods <- []*v1.Pod{first}
	eventually(t, "first running", func() (bool, string) { return allRunning(h.pod(first.UID)) })
	h.pods <- []*v1.Pod{first, second}
	p := waitPhase(t, h, second.UID, v1.PodFailed)
	const want = "Pod was rejected: Unexpected error while attempting to recover from admission failure: " +
		"preemption: error finding a set of pods to preempt: no set of running pods found to reclaim resources: [(res: pods, q: 1), ]"
	if p.Status.Reason != "UnexpectedAdmissionError" || p.Status.Message != want {
		t.Errorf("second status %s %q", p.Status.Reason, p.Status.Message)
	}
	if ok, detail := allRunning(h.pod(first.UID)); !ok {
		t.Errorf("first: %s", detail)
	}
}
