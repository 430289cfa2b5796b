package probe

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/nodeagent/nodeagent/pkg/runtime"
)

// waitTimeout bounds every wait for a worker goroutine: generous, as the
// machine is small and noisy; tests never assert how long anything took.
const waitTimeout = 30 * time.Second

// t0 is the fake clock's start.
var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// event is one recorded event.
type event struct {
	ref              *v1.ObjectReference
	typ, reason, msg string
}

// fakeRecorder records events; safe for concurrent use.
type fakeRecorder struct {
	mu     sync.Mutex
	events []event
}

func (r *fakeRecorder) Eventf(obj apiruntime.Object, typ, reason, format string, args ...interface{}) {
	ref, _ := obj.(*v1.ObjectReference)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, event{ref: ref, typ: typ, reason: reason, msg: fmt.Sprintf(format, args...)})
}

func (r *fakeRecorder) list() []event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]event(nil), r.events...)
}

// funcExec answers ExecSync at once with a function the test sets; it
// counts the calls and keeps the last one's arguments.
type funcExec struct {
	mu      sync.Mutex
	fn      func(id string, cmd []string) (*runtime.ExecResult, error)
	calls   int
	lastID  string
	lastCmd []string
	lastTO  time.Duration
}

func (e *funcExec) ExecSync(_ context.Context, id string, cmd []string, timeout time.Duration) (*runtime.ExecResult, error) {
	e.mu.Lock()
	e.calls++
	e.lastID, e.lastCmd, e.lastTO = id, cmd, timeout
	fn := e.fn
	e.mu.Unlock()
	if fn == nil {
		return &runtime.ExecResult{}, nil
	}
	return fn(id, cmd)
}

func (e *funcExec) set(fn func(id string, cmd []string) (*runtime.ExecResult, error)) {
	e.mu.Lock()
	e.fn = fn
	e.mu.Unlock()
}

// exit makes every call exit with code and output.
func (e *funcExec) exit(code int32, out string) {
	e.set(func(string, []string) (*runtime.ExecResult, error) {
		return &runtime.ExecResult{Stdout: []byte(out), ExitCode: code}, nil
	})
}

func (e *funcExec) fail(err error) {
	e.set(func(string, []string) (*runtime.ExecResult, error) { return nil, err })
}

func (e *funcExec) count() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.calls
}

// execCall is one ExecSync a stepExec holds until the test replies.
type execCall struct {
	id      string
	cmd     []string
	timeout time.Duration
	now     time.Time // the fake clock when the call was made
	reply   chan execReply
}

type execReply struct {
	res *runtime.ExecResult
	err error
}

// stepExec hands each ExecSync to the test and blocks until it replies (or
// the manager's context ends): the test runs the workers in lock step.
type stepExec struct {
	clock *testingclock.FakeClock
	calls chan *execCall
}

func newStepExec(c *testingclock.FakeClock) *stepExec {
	return &stepExec{clock: c, calls: make(chan *execCall)}
}

func (e *stepExec) ExecSync(ctx context.Context, id string, cmd []string, timeout time.Duration) (*runtime.ExecResult, error) {
	c := &execCall{id: id, cmd: cmd, timeout: timeout, now: e.clock.Now(), reply: make(chan execReply, 1)}
	select {
	case e.calls <- c:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	select {
	case r := <-c.reply:
		return r.res, r.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// next waits for the next call.
func (e *stepExec) next(t *testing.T) *execCall {
	t.Helper()
	select {
	case c := <-e.calls:
		return c
	case <-time.After(waitTimeout):
		t.Fatal("no probe ran")
		return nil
	}
}

// answer waits for the next call and replies with an exit code.
func (e *stepExec) answer(t *testing.T, code int32, out string) *execCall {
	t.Helper()
	c := e.next(t)
	c.reply <- execReply{res: &runtime.ExecResult{Stdout: []byte(out), ExitCode: code}}
	return c
}

// changes collects OnChange notifications.
type changes chan types.UID

func (c changes) onChange(uid types.UID) {
	select {
	case c <- uid:
	default: // tests that do not read them must not block the workers
	}
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// newTestManager is a manager on a fake clock with no start-up jitter wait:
// the clock is moved an hour past the manager's start, so workers probe as
// soon as they start and then on every period the test steps.
func newTestManager(t *testing.T, ex Execer) (*Manager, *testingclock.FakeClock, *fakeRecorder, changes) {
	t.Helper()
	clk := testingclock.NewFakeClock(t0)
	rec := &fakeRecorder{}
	ch := make(changes, 100)
	m := NewManager(t.Context(), Config{
		Exec: ex, Events: rec, OnChange: ch.onChange, Clock: clk,
		Jitter: func(time.Duration) time.Duration { return 0 },
		Logger: quietLogger(),
	})
	clk.Step(time.Hour)
	t.Cleanup(m.Close)
	return m, clk, rec, ch
}

// newWorker builds a worker as AddPod does, without its goroutine: tests
// drive doProbe themselves.
func newWorker(m *Manager, pod *v1.Pod, name string, k Kind) *worker {
	var c *v1.Container
	for _, cc := range probedContainers(pod) {
		if cc.Name == name {
			c = cc
		}
	}
	if c == nil {
		panic("no container " + name)
	}
	return &worker{m: m, key: workerKey{pod.UID, name, k}, pod: pod, container: c, spec: probeOf(c, k),
		stop: make(chan struct{}), trigger: make(chan struct{}, 1), lastResult: Unknown}
}

func execProbe(period, failures, successes, delay int32) *v1.Probe {
	return &v1.Probe{
		ProbeHandler:        v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"check", "--now"}}},
		TimeoutSeconds:      1,
		PeriodSeconds:       period,
		FailureThreshold:    failures,
		SuccessThreshold:    successes,
		InitialDelaySeconds: delay,
	}
}

func testPod(containers ...v1.Container) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "uid-1", ResourceVersion: "7"},
		Spec:       v1.PodSpec{Containers: containers, RestartPolicy: v1.RestartPolicyAlways},
	}
}

func ptr[T any](v T) *T { return &v }

// running is the status of a running container started at startedAt.
func running(name, id string, startedAt time.Time, started bool) v1.ContainerStatus {
	return v1.ContainerStatus{
		Name: name, ContainerID: id, Started: ptr(started),
		State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: metav1.NewTime(startedAt)}},
	}
}

func podStatus(cs ...v1.ContainerStatus) *v1.PodStatus {
	return &v1.PodStatus{Phase: v1.PodRunning, PodIP: "10.0.0.5", ContainerStatuses: cs}
}

// get is the cached result, failing the test when there is none.
func get(t *testing.T, m *Manager, k Kind, id string) Result {
	t.Helper()
	r, ok := m.Get(k, id)
	if !ok {
		t.Fatalf("no %s result for %s", k, id)
	}
	return r
}

// waitFor polls cond until it holds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitResult waits until the cached result is r.
func waitResult(t *testing.T, m *Manager, k Kind, id string, r Result) {
	t.Helper()
	waitFor(t, fmt.Sprintf("%s result %v for %s", k, r, id), func() bool {
		got, ok := m.Get(k, id)
		return ok && got == r
	})
}
