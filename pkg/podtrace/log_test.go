package podtrace

import (
	"fmt"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

var t0 = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)

type fakeClock struct{ now time.Time }

func (c *fakeClock) Now() time.Time { return c.now }

func testPod(name string) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name)}}
}

func TestLogKeepsTheFirstStepsAndCountsTheRest(t *testing.T) {
	c := &fakeClock{now: t0}
	l := New(Config{MaxSteps: 3, Now: c.Now})
	p := testPod("a")
	for i := range 5 {
		l.Record(p, Step{Name: fmt.Sprint(i), Start: t0.Add(time.Duration(i) * time.Second)})
	}
	tr, ok := l.Get("ns", "a", "")
	if !ok {
		t.Fatal("no trace")
	}
	if len(tr.Steps) != 3 || tr.Steps[0].Name != "0" || tr.Steps[2].Name != "2" || tr.DroppedSteps != 2 {
		t.Errorf("steps %+v dropped %d, want 0..2 and 2 dropped", tr.Steps, tr.DroppedSteps)
	}
}

func TestLogOrdersByStartKeepingRecordingOrderOfTies(t *testing.T) {
	l := New(Config{})
	p := testPod("a")
	l.Record(p, Step{Name: "late", Start: t0.Add(2 * time.Second), End: t0.Add(3 * time.Second)})
	l.Record(p, Step{Name: "tie1", Start: t0})
	l.Record(p, Step{Name: "tie2", Start: t0})
	l.Record(p, Step{Name: "early", Start: t0.Add(-time.Second), End: t0.Add(5 * time.Second)})
	tr, _ := l.Get("ns", "a", "")
	var got []string
	for _, s := range tr.Steps {
		got = append(got, s.Name)
	}
	if fmt.Sprint(got) != "[early tie1 tie2 late]" {
		t.Errorf("order %v", got)
	}
}

func TestLogEvictsGonePodsFirstThenTheLeastRecent(t *testing.T) {
	c := &fakeClock{now: t0}
	l := New(Config{MaxPods: 2, Now: c.Now})
	l.Record(testPod("old"), Step{Name: "x"})
	c.now = c.now.Add(time.Second)
	l.Record(testPod("gone"), Step{Name: "x"})
	l.PodGone("uid-gone")
	c.now = c.now.Add(time.Second)
	l.Record(testPod("new"), Step{Name: "x"})
	if _, ok := l.Get("ns", "gone", ""); ok {
		t.Error("the gone pod's log was kept over a live pod's")
	}
	c.now = c.now.Add(time.Second)
	l.Record(testPod("newer"), Step{Name: "x"})
	if _, ok := l.Get("ns", "old", ""); ok {
		t.Error("the least recently recorded pod was kept")
	}
	for _, n := range []string{"new", "newer"} {
		if _, ok := l.Get("ns", n, ""); !ok {
			t.Errorf("pod %s was dropped", n)
		}
	}
}

func TestLogDropsAPodsLogAfterTheRetention(t *testing.T) {
	c := &fakeClock{now: t0}
	l := New(Config{Retention: time.Minute, Now: c.Now})
	l.Record(testPod("a"), Step{Name: "x"})
	l.PodGone("uid-a")
	c.now = c.now.Add(time.Minute)
	if _, ok := l.Get("ns", "a", ""); !ok {
		t.Fatal("dropped within the retention")
	}
	c.now = c.now.Add(time.Second)
	if _, ok := l.Get("ns", "a", ""); ok {
		t.Fatal("kept after the retention")
	}
}

func TestLogGetPicksByUIDElseTheMostRecent(t *testing.T) {
	c := &fakeClock{now: t0}
	l := New(Config{Now: c.Now})
	first, second := testPod("a"), testPod("a")
	second.UID = "uid-a2"
	l.Record(first, Step{Name: "first"})
	c.now = c.now.Add(time.Second)
	l.Record(second, Step{Name: "second"})
	if tr, _ := l.Get("ns", "a", ""); tr.UID != "uid-a2" {
		t.Errorf("got %s, want the most recent pod", tr.UID)
	}
	if tr, _ := l.Get("ns", "a", "uid-a"); tr.UID != "uid-a" || tr.Steps[0].Name != "first" {
		t.Errorf("got %+v, want uid-a's", tr)
	}
}

func status(phase v1.PodPhase, ready v1.ConditionStatus) *v1.PodStatus {
	return &v1.PodStatus{Phase: phase, Conditions: []v1.PodCondition{{Type: v1.PodReady, Status: ready}}}
}

func TestStatusWrittenOncePerSummaryFromItsFirstGeneration(t *testing.T) {
	c := &fakeClock{now: t0}
	sink := &recordingSink{}
	l := New(Config{Now: c.Now, Sink: sink})
	p := testPod("a")
	l.StatusGenerated(p, status(v1.PodRunning, v1.ConditionTrue))
	c.now = c.now.Add(time.Second)
	l.StatusGenerated(p, status(v1.PodRunning, v1.ConditionTrue)) // same summary: the first counts
	c.now = c.now.Add(time.Second)
	l.StatusWritten(p, status(v1.PodRunning, v1.ConditionTrue))
	l.StatusWritten(p, status(v1.PodRunning, v1.ConditionTrue))
	tr, _ := l.Get("ns", "a", "")
	if len(tr.Steps) != 1 {
		t.Fatalf("steps %+v, want one", tr.Steps)
	}
	s := tr.Steps[0]
	if s.Name != StepStatus || !s.Start.Equal(t0) || s.Duration() != 2*time.Second || s.Detail != "status Running, Ready=True in the API" {
		t.Errorf("step %+v", s)
	}
	if sink.done != 1 || len(sink.steps) != 1 {
		t.Errorf("sink saw %d steps and %d ends, want 1 and 1 (Ready ends the trace)", len(sink.steps), sink.done)
	}
	l.Record(p, Step{Name: "after"})
	if len(sink.steps) != 1 {
		t.Error("the sink got a step after the trace ended")
	}
}

type recordingSink struct {
	mu    sync.Mutex
	steps []Step
	done  int
}

func (r *recordingSink) Step(_ PodRef, s Step) {
	r.mu.Lock()
	r.steps = append(r.steps, s)
	r.mu.Unlock()
}
func (r *recordingSink) Done(PodRef) { r.mu.Lock(); r.done++; r.mu.Unlock() }

func TestLogConcurrentUse(t *testing.T) {
	l := New(Config{MaxPods: 8, MaxSteps: 50, Sink: &recordingSink{}})
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			p := testPod(fmt.Sprint("p", g%10))
			for i := range 100 {
				l.Record(p, Step{Name: fmt.Sprint(i), Start: t0.Add(time.Duration(i))})
				l.StatusGenerated(p, status(v1.PodPending, v1.ConditionFalse))
				l.StatusWritten(p, status(v1.PodPending, v1.ConditionFalse))
				l.Get("ns", p.Name, "")
				if i == 50 {
					l.PodGone(p.UID)
				}
			}
		})
	}
	wg.Wait()
	n := 0
	for i := range 10 {
		if tr, ok := l.Get("ns", fmt.Sprint("p", i), ""); ok {
			n++
			if len(tr.Steps) > 50 {
				t.Errorf("pod %d kept %d steps, over the bound", i, len(tr.Steps))
			}
		}
	}
	if n > 8 {
		t.Errorf("%d pods kept, over the bound of 8", n)
	}
}
