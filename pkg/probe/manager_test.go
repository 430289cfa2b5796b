package probe

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	testingclock "k8s.io/utils/clock/testing"
)

// These tests run real worker goroutines on a fake clock: a stepExec holds
// each exec probe until the test answers it, and the test steps the clock
// by one period to make the workers probe again.

// cmdProbe is an exec probe running cmd.
func cmdProbe(cmd string, period, failures, successes int32) *v1.Probe {
	p := execProbe(period, failures, successes, 0)
	p.Exec.Command = []string{cmd}
	return p
}

// workerCount is how many workers the manager tracks for uid.
func workerCount(m *Manager, uid types.UID) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for k := range m.workers {
		if k.uid == uid {
			n++
		}
	}
	return n
}

// waitChange waits for an OnChange about uid.
func waitChange(t *testing.T, ch changes, uid types.UID) {
	t.Helper()
	select {
	case got := <-ch:
		if got != uid {
			t.Errorf("OnChange(%q), want %q", got, uid)
		}
	case <-time.After(waitTimeout):
		t.Fatal("no OnChange")
	}
}

// answerBoth answers two pending calls (in whatever order the workers make
// them) and returns them by command.
func answerBoth(t *testing.T, ex *stepExec, code int32) map[string]*execCall {
	t.Helper()
	got := map[string]*execCall{}
	for i := 0; i < 2; i++ {
		c := ex.answer(t, code, "")
		got[c.cmd[0]] = c
	}
	return got
}

func TestManagerLivenessEndToEnd(t *testing.T) {
	m, clk, rec, ch := newTestManager(t, nil)
	ex := newStepExec(clk)
	m.prober.exec = ex // before any worker runs
	pod := testPod(withProbe(Liveness, cmdProbe("live", 10, 2, 1)))
	m.SetPodStatus(pod.UID, podStatus(running("app", cid, clk.Now(), true)))
	m.AddPod(pod)

	// The first probe runs at once; the initial Success is cached before it.
	c := ex.answer(t, 1, "not ok")
	if c.id != "c1" || c.cmd[0] != "live" || c.timeout != time.Second {
		t.Errorf("ExecSync(%q, %q, %v)", c.id, c.cmd, c.timeout)
	}
	waitChange(t, ch, pod.UID)
	if got := get(t, m, Liveness, cid); got != Success {
		t.Fatalf("after one failure of two: %v, want Success", got)
	}

	// One period later the second failure reaches the threshold.
	clk.Step(10 * time.Second)
	ex.answer(t, 1, "still not ok")
	waitResult(t, m, Liveness, cid, Failure)
	waitChange(t, ch, pod.UID)
	evs := rec.list()
	if len(evs) != 2 || evs[0].msg != "Liveness probe failed: not ok" || evs[1].msg != "Liveness probe failed: still not ok" {
		t.Errorf("events = %+v", evs)
	}

	// The pod worker restarts the container: the new instance is alive
	// until proven otherwise, and probed again.
	m.SetPodStatus(pod.UID, podStatus(running("app", "containerd://c2", clk.Now(), true)))
	clk.Step(10 * time.Second)
	c = ex.answer(t, 0, "")
	if c.id != "c2" {
		t.Errorf("probed %q after the restart, want c2", c.id)
	}
	waitResult(t, m, Liveness, "containerd://c2", Success)
	if _, ok := m.Get(Liveness, cid); ok {
		t.Error("the killed container's result is still cached")
	}
}

func TestManagerReadinessTriggeredByUpdatePodStatus(t *testing.T) {
	m, clk, _, ch := newTestManager(t, nil)
	ex := newStepExec(clk)
	m.prober.exec = ex
	pod := testPod(withProbe(Readiness, cmdProbe("ready", 3600, 1, 1)))
	// The status of the last sync, which the worker reads, says started.
	m.SetPodStatus(pod.UID, podStatus(running("app", cid, clk.Now(), true)))
	m.AddPod(pod)

	// Not ready yet: UpdatePodStatus asks the worker for a probe now.
	st := podStatus(running("app", cid, clk.Now(), false))
	m.UpdatePodStatus(pod, st)
	if cs := st.ContainerStatuses[0]; cs.Started == nil || !*cs.Started || cs.Ready {
		t.Fatalf("Started %v, Ready %v; want started, not ready", cs.Started, cs.Ready)
	}
	ex.answer(t, 1, "warming up") // the worker's first probe
	// The clock never moves (the period is an hour): only the trigger can
	// make this second probe run.
	ex.answer(t, 0, "")
	waitResult(t, m, Readiness, cid, Success)
	waitChange(t, ch, pod.UID)

	st = podStatus(running("app", cid, clk.Now(), false))
	m.UpdatePodStatus(pod, st)
	if cs := st.ContainerStatuses[0]; !*cs.Started || !cs.Ready {
		t.Errorf("Started %v, Ready %v; want started and ready", *cs.Started, cs.Ready)
	}
}

func TestManagerStartupGatesLiveness(t *testing.T) {
	m, clk, _, _ := newTestManager(t, nil)
	ex := newStepExec(clk)
	m.prober.exec = ex
	c := withProbe(Startup, cmdProbe("startup", 10, 3, 1))
	c.LivenessProbe = cmdProbe("live", 10, 3, 1)
	pod := testPod(c)
	st := podStatus(running("app", cid, clk.Now(), false))
	m.SetPodStatus(pod.UID, st)
	m.AddPod(pod)

	// Only the startup probe runs while the container has not started.
	if c := ex.answer(t, 0, ""); c.cmd[0] != "startup" {
		t.Fatalf("first probe %q, want the startup probe", c.cmd[0])
	}
	waitResult(t, m, Startup, cid, Success)
	m.UpdatePodStatus(pod, st)
	if !*st.ContainerStatuses[0].Started || !st.ContainerStatuses[0].Ready {
		t.Fatalf("after the startup probe succeeded: Started %v Ready %v", *st.ContainerStatuses[0].Started, st.ContainerStatuses[0].Ready)
	}
	m.SetPodStatus(pod.UID, st)

	// Once started, only liveness runs.
	for i := 0; i < 3; i++ {
		clk.Step(10 * time.Second)
		if c := ex.answer(t, 0, ""); c.cmd[0] != "live" {
			t.Fatalf("probe %d after start: %q, want liveness", i, c.cmd[0])
		}
	}
}

func TestManagerWorkersEndWithTerminalPod(t *testing.T) {
	for _, phase := range []v1.PodPhase{v1.PodSucceeded, v1.PodFailed} {
		t.Run(string(phase), func(t *testing.T) {
			m, clk, _, _ := newTestManager(t, nil)
			ex := newStepExec(clk)
			m.prober.exec = ex
			c := withProbe(Liveness, cmdProbe("live", 10, 3, 1))
			c.ReadinessProbe = cmdProbe("ready", 10, 3, 1)
			pod := testPod(c)
			m.SetPodStatus(pod.UID, podStatus(running("app", cid, clk.Now(), true)))
			m.AddPod(pod)
			answerBoth(t, ex, 0)
			if n := workerCount(m, pod.UID); n != 2 {
				t.Fatalf("%d workers, want 2", n)
			}

			st := podStatus(running("app", cid, clk.Now(), true))
			st.Phase = phase
			m.SetPodStatus(pod.UID, st)
			clk.Step(10 * time.Second)
			waitFor(t, "workers to end", func() bool {
				_, live := m.Get(Liveness, cid)
				_, ready := m.Get(Readiness, cid)
				return workerCount(m, pod.UID) == 0 && !live && !ready
			})
		})
	}
}

func TestManagerWorkerEndsWhenContainerWillNotRestart(t *testing.T) {
	m, clk, _, _ := newTestManager(t, nil)
	ex := newStepExec(clk)
	m.prober.exec = ex
	pod := testPod(withProbe(Readiness, cmdProbe("ready", 10, 3, 1)))
	pod.Spec.RestartPolicy = v1.RestartPolicyNever
	m.SetPodStatus(pod.UID, podStatus(running("app", cid, clk.Now(), true)))
	m.AddPod(pod)
	ex.answer(t, 0, "")

	m.SetPodStatus(pod.UID, podStatus(v1.ContainerStatus{Name: "app", ContainerID: cid,
		State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 0}}}))
	clk.Step(10 * time.Second)
	waitFor(t, "the worker to end", func() bool { return workerCount(m, pod.UID) == 0 })
	waitFor(t, "its result to be forgotten", func() bool { _, ok := m.Get(Readiness, cid); return !ok })
}

func TestManagerRemovePod(t *testing.T) {
	m, clk, _, _ := newTestManager(t, nil)
	ex := newStepExec(clk)
	m.prober.exec = ex
	c := withProbe(Liveness, cmdProbe("live", 10, 3, 1))
	c.ReadinessProbe = cmdProbe("ready", 10, 3, 1)
	pod := testPod(c)
	other := testPod(withProbe(Readiness, cmdProbe("other", 10, 3, 1)))
	other.UID, other.Name = "uid-2", "other"
	m.SetPodStatus(pod.UID, podStatus(running("app", cid, clk.Now(), true)))
	m.SetPodStatus(other.UID, podStatus(running("app", "containerd://o1", clk.Now(), true)))
	m.AddPod(pod)
	m.AddPod(other)
	ex.answer(t, 0, "")
	ex.answer(t, 0, "")
	ex.answer(t, 0, "")

	m.RemovePod(pod.UID)
	if n := workerCount(m, pod.UID); n != 0 {
		t.Errorf("%d workers left", n)
	}
	if _, ok := m.podStatus(pod.UID); ok {
		t.Error("the removed pod's status is still kept")
	}
	// The results go when the goroutines end.
	waitFor(t, "the workers to end", func() bool {
		_, live := m.Get(Liveness, cid)
		_, ready := m.Get(Readiness, cid)
		return !live && !ready
	})
	// The other pod is still probed.
	if n := workerCount(m, other.UID); n != 1 {
		t.Errorf("other pod: %d workers, want 1", n)
	}
	clk.Step(10 * time.Second)
	if c := ex.answer(t, 0, ""); c.cmd[0] != "other" {
		t.Errorf("probe after RemovePod: %q, want the other pod's", c.cmd[0])
	}
	if got := get(t, m, Readiness, "containerd://o1"); got != Success {
		t.Errorf("other pod's readiness = %v", got)
	}
}

func TestManagerStopLivenessAndStartup(t *testing.T) {
	m, clk, _, _ := newTestManager(t, nil)
	ex := newStepExec(clk)
	m.prober.exec = ex
	c := withProbe(Liveness, cmdProbe("live", 10, 3, 1))
	c.ReadinessProbe = cmdProbe("ready", 10, 3, 1)
	c.StartupProbe = cmdProbe("startup", 10, 3, 1)
	pod := testPod(c)
	m.SetPodStatus(pod.UID, podStatus(running("app", cid, clk.Now(), true)))
	m.AddPod(pod)
	answerBoth(t, ex, 0) // liveness and readiness; startup does not run once started
	if n := workerCount(m, pod.UID); n != 3 {
		t.Fatalf("%d workers, want 3", n)
	}

	m.StopLivenessAndStartup(pod.UID)
	if m.hasWorker(pod.UID, "app", Liveness) || m.hasWorker(pod.UID, "app", Startup) {
		t.Error("liveness or startup worker still registered")
	}
	if !m.hasWorker(pod.UID, "app", Readiness) {
		t.Fatal("readiness worker stopped")
	}
	waitFor(t, "the liveness and startup workers to end", func() bool {
		_, live := m.Get(Liveness, cid)
		_, startup := m.Get(Startup, cid)
		return !live && !startup
	})
	for i := 0; i < 2; i++ {
		clk.Step(10 * time.Second)
		if c := ex.answer(t, 1, "stopping"); c.cmd[0] != "ready" {
			t.Fatalf("probe %q after StopLivenessAndStartup, want readiness only", c.cmd[0])
		}
	}
}

func TestManagerCloseStopsBusyWorkers(t *testing.T) {
	m, clk, _, _ := newTestManager(t, nil)
	ex := newStepExec(clk)
	m.prober.exec = ex
	c := withProbe(Liveness, cmdProbe("live", 10, 3, 1))
	c.ReadinessProbe = cmdProbe("ready", 10, 3, 1)
	pod := testPod(c)
	m.SetPodStatus(pod.UID, podStatus(running("app", cid, clk.Now(), true)))
	m.AddPod(pod)
	ex.next(t) // one worker is stuck in exec, never answered
	done := make(chan struct{})
	go func() { m.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(waitTimeout):
		t.Fatal("Close did not return")
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.workers) != 0 || len(m.results) != 0 {
		t.Errorf("after Close: %d workers, results %v", len(m.workers), m.results)
	}
}

func TestManagerCloseIdle(t *testing.T) {
	m, _, _, _ := newTestManager(t, &funcExec{})
	pod := testPod(withProbe(Readiness, execProbe(10, 3, 1, 0)))
	m.AddPod(pod) // no status: the worker waits for its ticker
	done := make(chan struct{})
	go func() { m.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(waitTimeout):
		t.Fatal("Close did not return")
	}
	m.Close() // twice is harmless
}

func TestManagerStartJitter(t *testing.T) {
	clk := testingclock.NewFakeClock(t0)
	ex := newStepExec(clk)
	var mu sync.Mutex
	var periods []time.Duration
	m := NewManager(t.Context(), Config{
		Exec: ex, Events: &fakeRecorder{}, Clock: clk, Logger: quietLogger(),
		Jitter: func(p time.Duration) time.Duration {
			mu.Lock()
			periods = append(periods, p)
			mu.Unlock()
			return 7 * time.Second
		},
	})
	defer m.Close()
	pod := testPod(withProbe(Liveness, cmdProbe("live", 10, 3, 1)))
	m.SetPodStatus(pod.UID, podStatus(running("app", cid, clk.Now(), true)))
	m.AddPod(pod)

	// Right after the start the worker first waits for its jitter.
	waitFor(t, "the worker to wait", func() bool { return clk.Waiters() == 1 })
	select {
	case c := <-ex.calls:
		t.Fatalf("probed at %v, before the jitter", c.now)
	default:
	}
	clk.Step(7 * time.Second)
	c := ex.answer(t, 0, "")
	if want := t0.Add(7 * time.Second); !c.now.Equal(want) {
		t.Errorf("first probe at %v, want %v", c.now, want)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(periods) != 1 || periods[0] != 10*time.Second {
		t.Errorf("jitter asked for %v, want [10s]", periods)
	}
}

func TestManagerAddPod(t *testing.T) {
	m, _, _, _ := newTestManager(t, &funcExec{})
	app := withProbe(Liveness, execProbe(10, 3, 1, 0))
	app.ReadinessProbe = execProbe(10, 3, 1, 0)
	pod := testPod(app, v1.Container{Name: "plain"})
	pod.Spec.InitContainers = []v1.Container{
		{Name: "init", ReadinessProbe: execProbe(10, 3, 1, 0)}, // not a sidecar: never probed
		{Name: "proxy", RestartPolicy: ptr(v1.ContainerRestartPolicyAlways), StartupProbe: execProbe(10, 3, 1, 0)},
	}
	m.AddPod(pod)
	m.AddPod(pod) // again: no second set of workers
	if n := workerCount(m, pod.UID); n != 3 {
		t.Errorf("%d workers, want 3", n)
	}
	for _, k := range []workerKey{{pod.UID, "app", Liveness}, {pod.UID, "app", Readiness}, {pod.UID, "proxy", Startup}} {
		if !m.hasWorker(k.uid, k.container, k.kind) {
			t.Errorf("no worker %v", k)
		}
	}
	if m.hasWorker(pod.UID, "init", Readiness) {
		t.Error("a regular init container got a probe worker")
	}
}

func TestManagerHTTPReadinessEndToEnd(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.URL.Path+" "+r.UserAgent())
		mu.Unlock()
		fmt.Fprint(w, "ok")
	}))
	defer srv.Close()
	host, portStr, _ := net.SplitHostPort(strings.TrimPrefix(srv.URL, "http://"))
	port, _ := strconv.Atoi(portStr)

	m, clk, rec, _ := newTestManager(t, &funcExec{})
	c := withProbe(Readiness, &v1.Probe{
		ProbeHandler:   v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Path: "/ready", Port: intstr.FromString("web")}},
		TimeoutSeconds: 20, PeriodSeconds: 10, SuccessThreshold: 1, FailureThreshold: 3,
	})
	c.Ports = []v1.ContainerPort{{Name: "web", ContainerPort: int32(port)}}
	pod := testPod(c)
	st := podStatus(running("app", cid, clk.Now(), true))
	st.PodIP = host
	m.SetPodStatus(pod.UID, st)
	m.AddPod(pod)
	waitResult(t, m, Readiness, cid, Success)
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 1 || seen[0] != "/ready "+UserAgent {
		t.Errorf("server saw %q", seen)
	}
	if evs := rec.list(); len(evs) != 0 {
		t.Errorf("events: %+v", evs)
	}
}

func TestProberHandlers(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/redirect":
			w.Header().Set("Location", "http://elsewhere.invalid/")
			w.WriteHeader(http.StatusMovedPermanently)
			fmt.Fprint(w, "gone")
		case "/fail":
			w.WriteHeader(http.StatusInternalServerError)
		}
	}))
	defer srv.Close()
	_, port := hostPort(t, srv.URL)
	hs := health.NewServer()
	hs.SetServingStatus("", healthpb.HealthCheckResponse_NOT_SERVING)
	hs.SetServingStatus("svc", healthpb.HealthCheckResponse_SERVING)
	grpcPort := grpcServer(t, func(s *grpc.Server) { healthpb.RegisterHealthServer(s, hs) })
	httpGet := func(path string, p intstr.IntOrString) *v1.Probe {
		return &v1.Probe{ProbeHandler: v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Path: path, Port: p}}, TimeoutSeconds: 20}
	}
	for _, tc := range []struct {
		name    string
		spec    *v1.Probe
		want    Result
		wantErr bool
		events  []string // "reason: message"
	}{
		{"http ok", httpGet("/", intstr.FromInt32(int32(port))), Success, false, nil},
		{"http redirect elsewhere warns", httpGet("/redirect", intstr.FromInt32(int32(port))), Success, false,
			[]string{"ProbeWarning: Readiness probe warning: Probe terminated redirects, Response body: gone"}},
		{"http 500", httpGet("/fail", intstr.FromInt32(int32(port))), Failure, false,
			[]string{"Unhealthy: Readiness probe failed: HTTP probe failed with statuscode: 500"}},
		{"http unknown port name", httpGet("/", intstr.FromString("nope")), Unknown, true,
			[]string{"Unhealthy: Readiness probe errored and resulted in unknown state: port nope not found"}},
		{"tcp named port", &v1.Probe{ProbeHandler: v1.ProbeHandler{TCPSocket: &v1.TCPSocketAction{Port: intstr.FromString("web")}}, TimeoutSeconds: 20}, Success, false, nil},
		{"tcp host", &v1.Probe{ProbeHandler: v1.ProbeHandler{TCPSocket: &v1.TCPSocketAction{Host: "127.0.0.1", Port: intstr.FromInt32(int32(port))}}, TimeoutSeconds: 20}, Success, false, nil},
		{"grpc named service", &v1.Probe{ProbeHandler: v1.ProbeHandler{GRPC: &v1.GRPCAction{Port: int32(grpcPort), Service: ptr("svc")}}, TimeoutSeconds: 20}, Success, false, nil},
		{"grpc default service", &v1.Probe{ProbeHandler: v1.ProbeHandler{GRPC: &v1.GRPCAction{Port: int32(grpcPort)}}, TimeoutSeconds: 20}, Failure, false,
			[]string{`Unhealthy: Readiness probe failed: service unhealthy (responded with "NOT_SERVING")`}},
		{"no handler", &v1.Probe{TimeoutSeconds: 1}, Unknown, true,
			[]string{"Unhealthy: Readiness probe errored and resulted in unknown state: missing probe handler for app"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &fakeRecorder{}
			p := &prober{exec: &funcExec{}, events: rec}
			c := withProbe(Readiness, tc.spec)
			c.Ports = []v1.ContainerPort{{Name: "web", ContainerPort: int32(port)}}
			pod := testPod(c)
			got, err := p.probe(context.Background(), Readiness, pod, "127.0.0.1", &pod.Spec.Containers[0], "c1")
			if got != tc.want || (err != nil) != tc.wantErr {
				t.Errorf("probe = %v, %v; want %v, error %v", got, err, tc.want, tc.wantErr)
			}
			var evs []string
			for _, e := range rec.list() {
				evs = append(evs, e.reason+": "+e.msg)
				if e.typ != v1.EventTypeWarning {
					t.Errorf("event type %s", e.typ)
				}
			}
			if strings.Join(evs, "\n") != strings.Join(tc.events, "\n") {
				t.Errorf("events = %q, want %q", evs, tc.events)
			}
		})
	}
	// A container without that probe kind counts as a success.
	p := &prober{exec: &funcExec{}, events: &fakeRecorder{}}
	pod := testPod(v1.Container{Name: "app"})
	if got, err := p.probe(context.Background(), Liveness, pod, "127.0.0.1", &pod.Spec.Containers[0], "c1"); got != Success || err != nil {
		t.Errorf("no probe: %v, %v", got, err)
	}
}

func TestManagerStopDuringJitter(t *testing.T) {
	clk := testingclock.NewFakeClock(t0)
	periods := make(chan time.Duration, 1)
	m := NewManager(t.Context(), Config{
		Exec: &funcExec{}, Events: &fakeRecorder{}, Clock: clk, Logger: quietLogger(),
		Jitter: func(p time.Duration) time.Duration { periods <- p; return time.Minute },
	})
	pod := testPod(withProbe(Readiness, execProbe(0, 3, 1, 0))) // period unset: 10s
	m.SetPodStatus(pod.UID, podStatus(running("app", cid, clk.Now(), true)))
	m.AddPod(pod)
	select {
	case p := <-periods:
		if p != 10*time.Second {
			t.Errorf("jitter within %v, want the default period 10s", p)
		}
	case <-time.After(waitTimeout):
		t.Fatal("no jitter asked for")
	}
	m.RemovePod(pod.UID)
	done := make(chan struct{})
	go func() { m.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(waitTimeout):
		t.Fatal("Close did not return")
	}
	if _, ok := m.Get(Readiness, cid); ok {
		t.Error("a worker stopped during its jitter left a result")
	}
}

func TestNewManagerDefaults(t *testing.T) {
	m := NewManager(t.Context(), Config{Exec: &funcExec{}, Events: &fakeRecorder{}})
	if m.clock == nil || m.jitter == nil || m.log == nil || m.onChange == nil {
		t.Fatal("defaults not filled in")
	}
	for i := 0; i < 100; i++ {
		if d := m.jitter(time.Second); d < 0 || d >= time.Second {
			t.Fatalf("default jitter %v outside [0, 1s)", d)
		}
	}
	m.onChange("uid") // a no-op, not a nil call
	m.Close()
}

func TestResultString(t *testing.T) {
	for r, want := range map[Result]string{Unknown: "Unknown", Success: "Success", Failure: "Failure", Result(42): "Unknown"} {
		if got := r.String(); got != want {
			t.Errorf("%d: %q, want %q", int(r), got, want)
		}
	}
}

// TestManagerStopsWithContext checks that the end of the manager's context
// (the agent's) cancels a probe in flight and stops every worker, busy or
// idle, without Close.
func TestManagerStopsWithContext(t *testing.T) {
	clk := testingclock.NewFakeClock(t0)
	ex := newStepExec(clk)
	ctx, cancel := context.WithCancel(t.Context())
	m := NewManager(ctx, Config{
		Exec: ex, Events: &fakeRecorder{}, Clock: clk, Logger: quietLogger(),
		Jitter: func(time.Duration) time.Duration { return 0 },
	})
	defer m.Close()
	clk.Step(time.Hour)
	busy := testPod(withProbe(Liveness, cmdProbe("live", 10, 3, 1)))
	m.SetPodStatus(busy.UID, podStatus(running("app", cid, clk.Now(), true)))
	m.AddPod(busy)
	idle := testPod(withProbe(Readiness, execProbe(10, 3, 1, 0)))
	idle.UID = "uid-2"
	m.AddPod(idle) // no status: waits for its ticker
	ex.next(t)     // the busy worker's probe, left unanswered
	cancel()
	done := make(chan struct{})
	go func() { m.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(waitTimeout):
		t.Fatal("workers still running after their context ended")
	}
}
