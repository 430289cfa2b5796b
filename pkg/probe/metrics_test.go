package probe

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

// fakeMetrics records what the workers report.
type fakeMetrics struct {
	mu   sync.Mutex
	runs []string // "<type> <result> <pod>/<container>"
	done []string
}

func (f *fakeMetrics) ProbeRun(probeType, result string, pod *v1.Pod, container string, _ time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.runs = append(f.runs, probeType+" "+result+" "+pod.Name+"/"+container)
}

func (f *fakeMetrics) ProbeWorkerDone(probeType string, pod *v1.Pod, container string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.done = append(f.done, probeType+" "+pod.Name+"/"+container)
}

func (f *fakeMetrics) snapshot() (runs, done []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.runs...), append([]string(nil), f.done...)
}

func TestProbeRunsAreReported(t *testing.T) {
	ex := &funcExec{}
	m, clk, _, _ := newTestManager(t, ex)
	fm := &fakeMetrics{}
	m.metrics = fm
	pod := testPod(withProbe(Readiness, execProbe(10, 3, 1, 0)))
	w := newWorker(m, pod, "app", Readiness)
	m.SetPodStatus(pod.UID, podStatus(running("app", cid, clk.Now(), true)))

	ex.exit(0, "")
	w.doProbe(context.Background())
	ex.exit(1, "no")
	w.doProbe(context.Background())
	ex.fail(errors.New("exec broke")) // an error says nothing: not counted
	w.doProbe(context.Background())

	runs, _ := fm.snapshot()
	want := []string{"Readiness successful web/app", "Readiness failed web/app"}
	if len(runs) != len(want) || runs[0] != want[0] || runs[1] != want[1] {
		t.Errorf("runs: %q, want %q", runs, want)
	}
}

func TestEndedWorkerDropsItsSeries(t *testing.T) {
	fm := &fakeMetrics{}
	m, _, _, _ := newTestManager(t, &funcExec{})
	m.metrics = fm
	pod := testPod(withProbe(Liveness, execProbe(10, 3, 1, 0)))
	m.AddPod(pod)
	m.RemovePod(pod.UID)
	waitFor(t, "the worker to end", func() bool {
		_, done := fm.snapshot()
		return len(done) == 1 && done[0] == "Liveness web/app"
	})
}
