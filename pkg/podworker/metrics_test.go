package podworker

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	critest "k8s.io/cri-api/pkg/apis/testing"

	"github.com/nodeagent/nodeagent/pkg/runtime"
)

// recordingMetrics is an Observer that records every call.
type recordingMetrics struct {
	mu        sync.Mutex
	passes    map[string]int
	pulls     []string // "start <uid>" / "done <uid> <size>"
	started   []types.UID
	forgot    []types.UID
	preempted []string // signals
	firstSee  map[types.UID]time.Time
}

func newRecordingMetrics() *recordingMetrics {
	return &recordingMetrics{passes: map[string]int{}, firstSee: map[types.UID]time.Time{}}
}

func (r *recordingMetrics) PodWorkerDuration(op string, _ time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.passes[op]++
}

func (r *recordingMetrics) ImagePullStarted(uid types.UID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pulls = append(r.pulls, "start "+string(uid))
}

func (r *recordingMetrics) ImagePullFinished(uid types.UID, _ time.Duration, size uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pulls = append(r.pulls, fmt.Sprintf("done %s %d", uid, size))
}

func (r *recordingMetrics) PodStarted(pod *v1.Pod, firstSeen, running time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.started = append(r.started, pod.UID)
	r.firstSee[pod.UID] = firstSeen
}

func (r *recordingMetrics) PodForgotten(uid types.UID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.forgot = append(r.forgot, uid)
}

func (r *recordingMetrics) PodPreempted(signal string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.preempted = append(r.preempted, signal)
}

func (r *recordingMetrics) snapshot() (passes map[string]int, pulls []string, started, forgot []types.UID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	passes = map[string]int{}
	for k, v := range r.passes {
		passes[k] = v
	}
	return passes, append([]string(nil), r.pulls...), append([]types.UID(nil), r.started...), append([]types.UID(nil), r.forgot...)
}

// startMetricsManager is startManager with an Observer.
func startMetricsManager(t *testing.T, obs Observer) *harness {
	t.Helper()
	h := &harness{rt: critest.NewFakeRuntimeService(), img: critest.NewFakeImageService(),
		pods: make(chan []*v1.Pod), events: make(chan runtime.PodEvent), logsDir: t.TempDir(), rootDir: t.TempDir()}
	h.img.SetFakeImageSize(42)
	m, err := New(Config{
		Runtime: h.rt, Images: h.img, NodeName: "node1", NodeIP: "192.0.2.1",
		RootDir: h.rootDir, PodLogsDir: h.logsDir, Logger: quietLogger(),
		ResyncPeriod: time.Hour, RetryPeriod: 20 * time.Millisecond, HousekeepingPeriod: time.Hour,
		Metrics: obs,
	})
	if err != nil {
		t.Fatal(err)
	}
	h.m = m
	h.start(t)
	return h
}

func TestMetricsHooksSeeAPodStartOnce(t *testing.T) {
	rec := newRecordingMetrics()
	h := startMetricsManager(t, rec)
	a, b := scenarioPod("a", "busybox:1", "alpine:3"), scenarioPod("b", "nginx:1")
	h.pods <- []*v1.Pod{a, b}
	for _, p := range []*v1.Pod{a, b} {
		eventually(t, p.Name+" running", func() (bool, string) { return allRunning(h.pod(p.UID)) })
	}
	eventually(t, "both starts reported", func() (bool, string) {
		_, _, started, _ := rec.snapshot()
		return len(started) == 2, fmt.Sprint(started)
	})

	// Later passes (a resync nudge, a runtime event) do not start them again.
	h.events <- runtime.PodEvent{UID: a.UID}
	h.events <- runtime.PodEvent{UID: b.UID}
	eventually(t, "the nudged passes", func() (bool, string) {
		passes, _, _, _ := rec.snapshot()
		return passes[opSync] >= 2, fmt.Sprint(passes)
	})
	passes, pulls, started, _ := rec.snapshot()
	if len(started) != 2 || passes[opCreate] != 2 {
		t.Errorf("starts %v, passes %v: want each pod started once, created once", started, passes)
	}
	if count(pulls, "start uid-a") != 2 || count(pulls, "done uid-a 42") != 2 || count(pulls, "done uid-b 42") != 1 {
		t.Errorf("pulls: %q", pulls)
	}
	rec.mu.Lock()
	seen := rec.firstSee[a.UID]
	rec.mu.Unlock()
	if seen.IsZero() {
		t.Error("no first-seen time")
	}

	h.pods <- []*v1.Pod{b}
	eventually(t, "a forgotten", func() (bool, string) {
		passes, _, _, forgot := rec.snapshot()
		return len(forgot) == 1 && forgot[0] == a.UID && passes[opKill] == 1, fmt.Sprint(forgot, passes)
	})
}

func TestMetricsPodRunningBeforeAgentIsNoStart(t *testing.T) {
	rec := newRecordingMetrics()
	h := startMetricsManager(t, rec)
	pod := scenarioPod("old", "busybox:1")
	h.pods <- []*v1.Pod{pod}
	eventually(t, "running", func() (bool, string) { return allRunning(h.pod(pod.UID)) })

	// A second manager on the same runtime is the agent restarted.
	m2, err := New(Config{Runtime: h.rt, Images: h.img, NodeName: "node1", RootDir: h.rootDir,
		PodLogsDir: h.logsDir, Logger: quietLogger(), ResyncPeriod: time.Hour, HousekeepingPeriod: time.Hour, Metrics: rec})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	pods := make(chan []*v1.Pod, 1)
	done := make(chan error, 1)
	go func() { done <- m2.Run(ctx, pods, nil) }()
	defer func() { cancel(); <-done }()
	pods <- []*v1.Pod{pod}
	<-m2.Ready()
	_, _, started, _ := rec.snapshot()
	if len(started) != 1 {
		t.Errorf("starts %v: a pod found running is not a start", started)
	}
}

func TestPodUpdated(t *testing.T) {
	base := scenarioPod("p", "busybox:1")
	with := func(f func(*v1.Pod)) *v1.Pod { p := base.DeepCopy(); f(p); return p }
	now := metav1.Now()
	for _, tc := range []struct {
		name string
		cur  *v1.Pod
		want bool
	}{
		{"same pod again", base.DeepCopy(), false},
		{"own status echoed, new resource version", with(func(p *v1.Pod) {
			p.ResourceVersion = "6"
			p.Status.Phase = v1.PodRunning
			p.Status.Conditions = []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue}}
		}), false},
		{"spec changed", with(func(p *v1.Pod) { p.Spec.Containers[0].Image = "busybox:2" }), true},
		{"label changed", with(func(p *v1.Pod) { p.Labels = map[string]string{"a": "b"} }), true},
		{"annotation changed", with(func(p *v1.Pod) { p.Annotations = map[string]string{"a": "b"} }), true},
		{"deleted", with(func(p *v1.Pod) { p.DeletionTimestamp = &now }), true},
		{"finished elsewhere", with(func(p *v1.Pod) { p.Status.Phase = v1.PodFailed }), true},
		{"readiness gate condition set", with(func(p *v1.Pod) {
			p.Status.Conditions = []v1.PodCondition{{Type: "example.com/gate", Status: v1.ConditionTrue}}
		}), true},
	} {
		if got := podUpdated(base, tc.cur); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
