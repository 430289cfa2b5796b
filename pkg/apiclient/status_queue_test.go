package apiclient

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
)

// gatedClient holds every status patch in gate before it reaches the
// fake clientset, whose reactors run under one lock and so cannot block.
type gatedClient struct {
	kubernetes.Interface
	gate func(name string)
}

func (g gatedClient) CoreV1() corev1client.CoreV1Interface {
	return gatedCore{g.Interface.CoreV1(), g.gate}
}

type gatedCore struct {
	corev1client.CoreV1Interface
	gate func(string)
}

func (g gatedCore) Pods(ns string) corev1client.PodInterface {
	return gatedPods{g.CoreV1Interface.Pods(ns), g.gate}
}

type gatedPods struct {
	corev1client.PodInterface
	gate func(string)
}

func (g gatedPods) Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, sub ...string) (*v1.Pod, error) {
	g.gate(name)
	return g.PodInterface.Patch(ctx, name, pt, data, opts, sub...)
}

// inFlight counts the patches held in the gate and the most at once.
type inFlight struct {
	mu      sync.Mutex
	now     map[string]int
	total   int
	max     int
	arrived chan string
	release chan struct{}
}

func newInFlight() *inFlight {
	return &inFlight{now: map[string]int{}, arrived: make(chan string, 100), release: make(chan struct{})}
}

func (f *inFlight) gate(name string) {
	f.mu.Lock()
	f.now[name]++
	f.total++
	f.max = max(f.max, f.total)
	f.mu.Unlock()
	f.arrived <- name
	<-f.release
	f.mu.Lock()
	f.now[name]--
	f.total--
	f.mu.Unlock()
}

func (f *inFlight) perPod(name string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now[name]
}

func waitArrived(t *testing.T, f *inFlight) string {
	t.Helper()
	select {
	case n := <-f.arrived:
		return n
	case <-time.After(10 * time.Second):
		t.Fatal("no patch arrived")
		return ""
	}
}

// runStatus runs s until the test ends; f's held patches are let go
// first.
func runStatus(t *testing.T, s *StatusManager, f *inFlight) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	t.Cleanup(func() {
		close(f.release)
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
}

func newGatedStatus(t *testing.T, workers int, objs ...runtime.Object) (*StatusManager, *fake.Clientset, *inFlight) {
	t.Helper()
	cs := fake.NewClientset(objs...)
	apiLike(t, cs)
	f := newInFlight()
	s, err := NewStatusManager(StatusConfig{Client: gatedClient{cs, f.gate}, Logger: discard, Workers: workers})
	if err != nil {
		t.Fatal(err)
	}
	return s, cs, f
}

// Updates queued while one is in flight coalesce: the next patch sends
// the latest status only, after the first is done.
func TestStatusCoalescesAndKeepsOrder(t *testing.T) {
	p := withRV(apiPod("web", "u1", v1.PodPending), "1")
	s, cs, f := newGatedStatus(t, 4, p)
	runStatus(t, s, f)
	s.OnStatus(fromAPI(p), v1.PodStatus{Phase: v1.PodPending, Message: "first"})
	waitArrived(t, f)
	for i := range 5 {
		s.OnStatus(fromAPI(p), v1.PodStatus{Phase: v1.PodRunning, Message: fmt.Sprint("update ", i)})
	}
	// Four idle workers, and the pod is queued again: none may send it
	// while the first patch is held.
	if n := f.perPod("web"); n != 1 {
		t.Fatalf("%d patches of one pod at once", n)
	}
	f.release <- struct{}{}
	waitArrived(t, f)
	f.release <- struct{}{}
	waitFor(t, func() bool { return getPod(t, cs, "web").Status.Message == "update 4" })
	if n := countActions(cs, "patch", "pods", "status"); n != 2 {
		t.Errorf("%d patches, want 2 (the first, then the latest of five)", n)
	}
}

// Patches of different pods run in parallel, at most Workers at once.
func TestStatusParallelismBound(t *testing.T) {
	const workers, pods = 3, 8
	var objs []runtime.Object
	var ps []*v1.Pod
	for i := range pods {
		p := withRV(apiPod(fmt.Sprint("p", i), fmt.Sprint("u", i), v1.PodPending), "1")
		objs, ps = append(objs, p), append(ps, p)
	}
	s, cs, f := newGatedStatus(t, workers, objs...)
	runStatus(t, s, f)
	for _, p := range ps {
		s.OnStatus(fromAPI(p), running())
	}
	for range workers {
		waitArrived(t, f)
	}
	// Every worker holds a patch: the others wait in the queue.
	waitFor(t, func() bool { return s.queue.Len() == pods-workers })
	for range pods - workers {
		f.release <- struct{}{}
		waitArrived(t, f)
	}
	for range workers {
		f.release <- struct{}{}
	}
	waitFor(t, func() bool { return countActions(cs, "patch", "pods", "status") == pods })
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.max != workers {
		t.Errorf("at most %d patches at once, want %d", f.max, workers)
	}
}

// A new status is queued at once even while an earlier failure of the
// same pod backs off: a pod's first Running is not held behind a retry.
func TestStatusNewUpdateSkipsBackoff(t *testing.T) {
	p := withRV(apiPod("web", "u1", v1.PodPending), "1")
	cs := fake.NewClientset(p)
	fail := true
	cs.PrependReactor("patch", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		if fail {
			fail = false
			return true, nil, errors.New("connection refused")
		}
		return false, nil, nil
	})
	s, err := NewStatusManager(StatusConfig{Client: cs, Logger: discard, RetryBase: time.Hour, RetryMax: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.queue.ShutDown)
	s.OnStatus(fromAPI(p), v1.PodStatus{Phase: v1.PodPending, Message: "creating"})
	drain(s) // fails: retried in an hour
	if s.queue.Len() != 0 {
		t.Fatal("failed update not delayed")
	}
	s.OnStatus(fromAPI(p), running())
	if s.queue.Len() != 1 {
		t.Fatal("new status waits for the back-off")
	}
	drain(s)
	if got := getPod(t, cs, "web"); got.Status.Phase != v1.PodRunning {
		t.Errorf("phase = %s", got.Status.Phase)
	}
}

// waitFor polls cond, which the manager's goroutines make true.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached")
		}
		time.Sleep(5 * time.Millisecond)
	}
}
