package probe

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/nodeagent/nodeagent/pkg/runtime"
)

// These tests drive one worker's doProbe by hand: no goroutine, no timing.

const cid = "containerd://c1"

// withProbe is a container "app" with spec as its probe of kind k.
func withProbe(k Kind, spec *v1.Probe) v1.Container {
	c := v1.Container{Name: "app", Image: "img"}
	switch k {
	case Liveness:
		c.LivenessProbe = spec
	case Readiness:
		c.ReadinessProbe = spec
	case Startup:
		c.StartupProbe = spec
	}
	return c
}

// startedFor is the Started a container must have for probes of kind k to
// run: startup probes run until it started, the others after.
func startedFor(k Kind) bool { return k != Startup }

func drain(ch changes) []types.UID {
	var got []types.UID
	for {
		select {
		case u := <-ch:
			got = append(got, u)
		default:
			return got
		}
	}
}

func TestWorkerInitialResult(t *testing.T) {
	for k, want := range map[Kind]Result{Readiness: Failure, Liveness: Success, Startup: Unknown} {
		t.Run(string(k), func(t *testing.T) {
			ex := &funcExec{}
			ex.exit(1, "no") // below the threshold of 3: the initial result stays
			m, clk, _, ch := newTestManager(t, ex)
			pod := testPod(withProbe(k, execProbe(10, 3, 1, 0)))
			w := newWorker(m, pod, "app", k)

			// No status yet, then no container ID yet: nothing to probe.
			if !w.doProbe(context.Background()) {
				t.Fatal("worker ended without a status")
			}
			st := podStatus(v1.ContainerStatus{Name: "app", State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "ContainerCreating"}}})
			m.SetPodStatus(pod.UID, st)
			if !w.doProbe(context.Background()) {
				t.Fatal("worker ended before its container was created")
			}
			if ex.count() != 0 || len(drain(ch)) != 0 {
				t.Fatal("probed or reported a container that does not exist yet")
			}
			if _, ok := m.Get(k, cid); ok {
				t.Fatal("result before the container exists")
			}

			m.SetPodStatus(pod.UID, podStatus(running("app", cid, clk.Now(), startedFor(k))))
			if !w.doProbe(context.Background()) {
				t.Fatal("worker ended")
			}
			if got := get(t, m, k, cid); got != want {
				t.Errorf("initial %s result = %v, want %v", k, got, want)
			}
			if got := get(t, m, k, "c1"); got != want {
				t.Errorf("result by runtime ID = %v, want %v", got, want)
			}
			if got := drain(ch); len(got) != 1 || got[0] != pod.UID {
				t.Errorf("OnChange calls = %v, want one for the initial result", got)
			}
			if ex.count() != 1 {
				t.Errorf("exec calls = %d, want 1", ex.count())
			}
		})
	}
}

// step is one doProbe: the exec outcome ("ok", "fail", "err"), whether
// the handler must have run, and the cached result after it.
type step struct {
	exec   string
	probed bool
	want   Result
}

func runSteps(t *testing.T, k Kind, spec *v1.Probe, steps []step) {
	t.Helper()
	ex := &funcExec{}
	m, clk, _, _ := newTestManager(t, ex)
	pod := testPod(withProbe(k, spec))
	w := newWorker(m, pod, "app", k)
	m.SetPodStatus(pod.UID, podStatus(running("app", cid, clk.Now(), startedFor(k))))
	for i, s := range steps {
		switch s.exec {
		case "ok":
			ex.exit(0, "fine")
		case "fail":
			ex.exit(1, "broken")
		case "err":
			ex.fail(errors.New("runtime unavailable"))
		}
		before := ex.count()
		if !w.doProbe(context.Background()) {
			t.Fatalf("step %d: worker ended", i)
		}
		if probed := ex.count() > before; probed != s.probed {
			t.Errorf("step %d (%s): probed = %v, want %v", i, s.exec, probed, s.probed)
		}
		if got := get(t, m, k, cid); got != s.want {
			t.Errorf("step %d (%s): result = %v, want %v", i, s.exec, got, s.want)
		}
	}
}

func TestWorkerThresholds(t *testing.T) {
	for _, tc := range []struct {
		name  string
		kind  Kind
		spec  *v1.Probe
		steps []step
	}{
		{"liveness fails after 3 failures, then holds", Liveness, execProbe(10, 3, 1, 0), []step{
			{"fail", true, Success}, {"fail", true, Success}, {"fail", true, Failure},
			{"ok", false, Failure}, {"ok", false, Failure}, // on hold until a new container
		}},
		{"liveness failures must be in a row", Liveness, execProbe(10, 3, 1, 0), []step{
			{"fail", true, Success}, {"fail", true, Success}, {"ok", true, Success},
			{"fail", true, Success}, {"fail", true, Success}, {"fail", true, Failure},
		}},
		{"liveness threshold 1", Liveness, execProbe(10, 1, 1, 0), []step{
			{"ok", true, Success}, {"fail", true, Failure}, {"ok", false, Failure},
		}},
		{"readiness success and failure thresholds", Readiness, execProbe(10, 3, 2, 0), []step{
			{"ok", true, Failure}, {"ok", true, Success}, {"ok", true, Success},
			{"fail", true, Success}, {"fail", true, Success}, {"fail", true, Failure},
			{"fail", true, Failure}, // readiness is never on hold
			{"ok", true, Failure}, {"fail", true, Failure}, {"ok", true, Failure}, {"ok", true, Success},
		}},
		{"startup fails after 3 failures, then holds", Startup, execProbe(10, 3, 1, 0), []step{
			{"fail", true, Unknown}, {"fail", true, Unknown}, {"fail", true, Failure},
			{"ok", false, Failure},
		}},
		{"startup succeeds", Startup, execProbe(10, 3, 1, 0), []step{
			{"fail", true, Unknown}, {"ok", true, Success}, {"ok", true, Success},
		}},
		{"errors keep the result and the run", Liveness, execProbe(10, 2, 1, 0), []step{
			{"fail", true, Success}, {"err", true, Success}, {"err", true, Success}, {"fail", true, Failure},
		}},
		{"errors keep a readiness success", Readiness, execProbe(10, 1, 1, 0), []step{
			{"ok", true, Success}, {"err", true, Success}, {"ok", true, Success}, {"fail", true, Failure}, {"err", true, Failure},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) { runSteps(t, tc.kind, tc.spec, tc.steps) })
	}
}

func TestWorkerErrorRetries(t *testing.T) {
	ex := &funcExec{}
	ex.fail(errors.New("runtime unavailable"))
	m, clk, rec, _ := newTestManager(t, ex)
	pod := testPod(withProbe(Liveness, execProbe(10, 1, 1, 0)))
	w := newWorker(m, pod, "app", Liveness)
	m.SetPodStatus(pod.UID, podStatus(running("app", cid, clk.Now(), true)))
	w.doProbe(context.Background())
	if ex.count() != maxRetries {
		t.Errorf("exec calls = %d, want %d (retries of an erroring probe)", ex.count(), maxRetries)
	}
	if got := get(t, m, Liveness, cid); got != Success {
		t.Errorf("result = %v: an error must not change it", got)
	}
	evs := rec.list()
	if len(evs) != 1 {
		t.Fatalf("events = %+v, want one", evs)
	}
	if want := "Liveness probe errored and resulted in unknown state: runtime unavailable"; evs[0].msg != want || evs[0].reason != "Unhealthy" || evs[0].typ != v1.EventTypeWarning {
		t.Errorf("event = %+v, want Warning Unhealthy %q", evs[0], want)
	}
	// A retry that succeeds ends the retries.
	n := 0
	ex.set(func(string, []string) (*runtime.ExecResult, error) {
		if n++; n == 1 {
			return nil, errors.New("blip")
		}
		return &runtime.ExecResult{}, nil
	})
	before := ex.count()
	w.doProbe(context.Background())
	if ex.count()-before != 2 || len(rec.list()) != 1 {
		t.Errorf("exec calls = %d, events = %d; want 2 calls and no new event", ex.count()-before, len(rec.list())-1)
	}
}

func TestWorkerExecArguments(t *testing.T) {
	ex := &funcExec{}
	m, clk, _, _ := newTestManager(t, ex)
	spec := execProbe(10, 3, 1, 0)
	spec.TimeoutSeconds = 4
	pod := testPod(withProbe(Readiness, spec))
	w := newWorker(m, pod, "app", Readiness)
	m.SetPodStatus(pod.UID, podStatus(running("app", cid, clk.Now(), true)))
	w.doProbe(context.Background())
	if ex.lastID != "c1" || strings.Join(ex.lastCmd, " ") != "check --now" || ex.lastTO != 4*time.Second {
		t.Errorf("ExecSync(%q, %q, %v), want (c1, check --now, 4s)", ex.lastID, ex.lastCmd, ex.lastTO)
	}
}

func TestWorkerNewContainerResets(t *testing.T) {
	for _, k := range []Kind{Liveness, Startup} {
		t.Run(string(k), func(t *testing.T) {
			ex := &funcExec{}
			ex.exit(1, "dead")
			m, clk, _, ch := newTestManager(t, ex)
			pod := testPod(withProbe(k, execProbe(10, 1, 1, 0)))
			w := newWorker(m, pod, "app", k)
			m.SetPodStatus(pod.UID, podStatus(running("app", cid, clk.Now(), startedFor(k))))
			w.doProbe(context.Background())
			if got := get(t, m, k, cid); got != Failure {
				t.Fatalf("result = %v, want Failure", got)
			}
			// On hold: the same container is not probed again.
			w.doProbe(context.Background())
			w.doProbe(context.Background())
			if ex.count() != 1 {
				t.Fatalf("exec calls = %d while on hold", ex.count())
			}
			drain(ch)

			// The container was restarted: a new ID resets the result and
			// resumes probing the new instance.
			ex.exit(0, "")
			const newID = "containerd://c2"
			m.SetPodStatus(pod.UID, podStatus(running("app", newID, clk.Now(), startedFor(k))))
			w.doProbe(context.Background())
			if ex.count() != 2 || ex.lastID != "c2" {
				t.Errorf("exec calls = %d (last %q), want a probe of c2", ex.count(), ex.lastID)
			}
			if _, ok := m.Get(k, cid); ok {
				t.Error("the old container's result is still cached")
			}
			if got := get(t, m, k, newID); got != Success {
				t.Errorf("new container's result = %v, want Success", got)
			}
			if len(drain(ch)) == 0 {
				t.Error("no OnChange for the new container")
			}
		})
	}
}

func TestWorkerNewContainerInitialValue(t *testing.T) {
	// The new container's result is the kind's initial value until its
	// threshold is reached; the old run of failures does not carry over.
	ex := &funcExec{}
	ex.exit(1, "no")
	m, clk, _, _ := newTestManager(t, ex)
	pod := testPod(withProbe(Readiness, execProbe(10, 3, 2, 0)))
	w := newWorker(m, pod, "app", Readiness)
	m.SetPodStatus(pod.UID, podStatus(running("app", cid, clk.Now(), true)))
	ex.exit(0, "")
	w.doProbe(context.Background())
	w.doProbe(context.Background())
	if got := get(t, m, Readiness, cid); got != Success {
		t.Fatalf("result = %v, want Success", got)
	}
	m.SetPodStatus(pod.UID, podStatus(running("app", "containerd://c2", clk.Now(), true)))
	w.doProbe(context.Background())
	if got := get(t, m, Readiness, "containerd://c2"); got != Failure {
		t.Errorf("new container after one success = %v, want the initial Failure (threshold 2)", got)
	}
	w.doProbe(context.Background())
	if got := get(t, m, Readiness, "containerd://c2"); got != Success {
		t.Errorf("new container after two successes = %v, want Success", got)
	}
}

func TestWorkerInitialDelay(t *testing.T) {
	for _, k := range []Kind{Liveness, Readiness, Startup} {
		t.Run(string(k), func(t *testing.T) {
			ex := &funcExec{}
			m, clk, _, _ := newTestManager(t, ex)
			pod := testPod(withProbe(k, execProbe(1, 3, 1, 10)))
			w := newWorker(m, pod, "app", k)
			startedAt := clk.Now()
			m.SetPodStatus(pod.UID, podStatus(running("app", cid, startedAt, startedFor(k))))
			for i := 0; i < 10; i++ { // 0s .. 9s after the container started
				w.doProbe(context.Background())
				if ex.count() != 0 {
					t.Fatalf("probed %v after start, before the initial delay", clk.Since(startedAt))
				}
				clk.Step(time.Second)
			}
			if got := get(t, m, k, cid); got != initialResult(k) {
				t.Errorf("result during the delay = %v, want the initial %v", got, initialResult(k))
			}
			w.doProbe(context.Background()) // 10s
			if ex.count() != 1 {
				t.Errorf("exec calls = %d at the end of the initial delay", ex.count())
			}
		})
	}
}

func TestWorkerInitialDelayFromRunningStart(t *testing.T) {
	// The delay counts from the running state's StartedAt, not from when the
	// worker first saw the container.
	ex := &funcExec{}
	m, clk, _, _ := newTestManager(t, ex)
	pod := testPod(withProbe(Liveness, execProbe(1, 3, 1, 10)))
	w := newWorker(m, pod, "app", Liveness)
	m.SetPodStatus(pod.UID, podStatus(running("app", cid, clk.Now().Add(-10*time.Second), true)))
	w.doProbe(context.Background())
	if ex.count() != 1 {
		t.Errorf("container running for 10s with a 10s delay was not probed")
	}
}

func TestWorkerStartupGating(t *testing.T) {
	for _, tc := range []struct {
		kind    Kind
		started *bool
		probed  bool
	}{
		{Startup, nil, true},
		{Startup, ptr(false), true},
		{Startup, ptr(true), false},
		{Liveness, nil, false},
		{Liveness, ptr(false), false},
		{Liveness, ptr(true), true},
		{Readiness, nil, false},
		{Readiness, ptr(false), false},
		{Readiness, ptr(true), true},
	} {
		ex := &funcExec{}
		m, clk, _, _ := newTestManager(t, ex)
		pod := testPod(withProbe(tc.kind, execProbe(10, 3, 1, 0)))
		w := newWorker(m, pod, "app", tc.kind)
		cs := running("app", cid, clk.Now(), false)
		cs.Started = tc.started
		m.SetPodStatus(pod.UID, podStatus(cs))
		if !w.doProbe(context.Background()) {
			t.Fatal("worker ended")
		}
		started := "nil"
		if tc.started != nil {
			started = map[bool]string{true: "true", false: "false"}[*tc.started]
		}
		if probed := ex.count() == 1; probed != tc.probed {
			t.Errorf("%s probe with Started=%s: probed = %v, want %v", tc.kind, started, probed, tc.probed)
		}
	}
}

func TestWorkerContainerNotRunning(t *testing.T) {
	waiting := v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}
	terminated := v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 1}}
	for _, tc := range []struct {
		name   string
		policy v1.RestartPolicy
		state  v1.ContainerState
		keep   bool
	}{
		{"waiting always", v1.RestartPolicyAlways, waiting, true},
		{"waiting never", v1.RestartPolicyNever, waiting, true},
		{"terminated always", v1.RestartPolicyAlways, terminated, true},
		{"terminated on failure", v1.RestartPolicyOnFailure, terminated, true},
		{"terminated never", v1.RestartPolicyNever, terminated, false},
	} {
		for _, k := range []Kind{Liveness, Readiness, Startup} {
			ex := &funcExec{}
			m, _, _, _ := newTestManager(t, ex)
			pod := testPod(withProbe(k, execProbe(10, 3, 1, 0)))
			pod.Spec.RestartPolicy = tc.policy
			w := newWorker(m, pod, "app", k)
			m.SetPodStatus(pod.UID, podStatus(v1.ContainerStatus{Name: "app", ContainerID: cid, State: tc.state}))
			if keep := w.doProbe(context.Background()); keep != tc.keep {
				t.Errorf("%s, %s: doProbe = %v, want %v", tc.name, k, keep, tc.keep)
			}
			if ex.count() != 0 {
				t.Errorf("%s, %s: probed a container that is not running", tc.name, k)
			}
			if got := get(t, m, k, cid); got != Failure {
				t.Errorf("%s, %s: result = %v, want Failure", tc.name, k, got)
			}
		}
	}
}

func TestWorkerTerminalPod(t *testing.T) {
	for _, phase := range []v1.PodPhase{v1.PodSucceeded, v1.PodFailed} {
		ex := &funcExec{}
		m, clk, _, _ := newTestManager(t, ex)
		pod := testPod(withProbe(Readiness, execProbe(10, 3, 1, 0)))
		w := newWorker(m, pod, "app", Readiness)
		st := podStatus(running("app", cid, clk.Now(), true))
		st.Phase = phase
		m.SetPodStatus(pod.UID, st)
		if w.doProbe(context.Background()) {
			t.Errorf("%s pod: worker goes on", phase)
		}
		if ex.count() != 0 {
			t.Errorf("%s pod: probed", phase)
		}
	}
}

func TestWorkerSidecar(t *testing.T) {
	ex := &funcExec{}
	ex.exit(1, "sidecar down")
	m, clk, rec, _ := newTestManager(t, ex)
	pod := testPod(v1.Container{Name: "app"})
	pod.Spec.InitContainers = []v1.Container{{
		Name: "proxy", RestartPolicy: ptr(v1.ContainerRestartPolicyAlways),
		LivenessProbe: execProbe(10, 1, 1, 0),
	}}
	w := newWorker(m, pod, "proxy", Liveness)
	st := podStatus(running("app", "containerd://app1", clk.Now(), true))
	st.InitContainerStatuses = []v1.ContainerStatus{running("proxy", "containerd://proxy1", clk.Now(), true)}
	m.SetPodStatus(pod.UID, st)
	w.doProbe(context.Background())
	if ex.lastID != "proxy1" {
		t.Errorf("probed %q, want the sidecar proxy1", ex.lastID)
	}
	if got := get(t, m, Liveness, "containerd://proxy1"); got != Failure {
		t.Errorf("sidecar liveness = %v, want Failure", got)
	}
	evs := rec.list()
	if len(evs) != 1 || evs[0].ref == nil || evs[0].ref.FieldPath != "spec.initContainers{proxy}" {
		t.Errorf("events = %+v, want one about spec.initContainers{proxy}", evs)
	}
}

func TestWorkerEvents(t *testing.T) {
	ex := &funcExec{}
	ex.exit(1, "boom-output")
	m, clk, rec, _ := newTestManager(t, ex)
	pod := testPod(withProbe(Liveness, execProbe(10, 1, 1, 0)))
	w := newWorker(m, pod, "app", Liveness)
	m.SetPodStatus(pod.UID, podStatus(running("app", cid, clk.Now(), true)))
	w.doProbe(context.Background())
	evs := rec.list()
	if len(evs) != 1 {
		t.Fatalf("events = %+v, want one", evs)
	}
	e := evs[0]
	if e.typ != v1.EventTypeWarning || e.reason != "Unhealthy" || e.msg != "Liveness probe failed: boom-output" {
		t.Errorf("event = %s %s %q", e.typ, e.reason, e.msg)
	}
	want := v1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: "ns", Name: "web", UID: "uid-1",
		ResourceVersion: "7", FieldPath: "spec.containers{app}"}
	if e.ref == nil || *e.ref != want {
		t.Errorf("involved object = %+v, want %+v", e.ref, want)
	}
	// Successes record nothing.
	ex.exit(0, "fine")
	m.SetPodStatus(pod.UID, podStatus(running("app", "containerd://c2", clk.Now(), true)))
	w.doProbe(context.Background())
	if len(rec.list()) != 1 {
		t.Errorf("a success recorded an event: %+v", rec.list()[1:])
	}
}

func TestWorkerEventKinds(t *testing.T) {
	for _, k := range []Kind{Readiness, Startup} {
		ex := &funcExec{}
		ex.exit(3, "not yet")
		m, clk, rec, _ := newTestManager(t, ex)
		pod := testPod(withProbe(k, execProbe(10, 3, 1, 0)))
		w := newWorker(m, pod, "app", k)
		m.SetPodStatus(pod.UID, podStatus(running("app", cid, clk.Now(), startedFor(k))))
		w.doProbe(context.Background())
		evs := rec.list()
		if want := string(k) + " probe failed: not yet"; len(evs) != 1 || evs[0].msg != want {
			t.Errorf("%s events = %+v, want %q", k, evs, want)
		}
	}
}

func TestWorkerPodIPForNetworkProbes(t *testing.T) {
	// A TCP probe without a host dials the pod IP from the status; the
	// status here names an address nothing listens on, so it fails.
	ex := &funcExec{}
	m, clk, rec, _ := newTestManager(t, ex)
	spec := &v1.Probe{ProbeHandler: v1.ProbeHandler{TCPSocket: &v1.TCPSocketAction{Port: intstr.FromInt32(int32(closedPort(t)))}},
		TimeoutSeconds: 20, PeriodSeconds: 10, FailureThreshold: 1, SuccessThreshold: 1}
	pod := testPod(withProbe(Readiness, spec))
	w := newWorker(m, pod, "app", Readiness)
	st := podStatus(running("app", cid, clk.Now(), true))
	st.PodIP = "127.0.0.1"
	m.SetPodStatus(pod.UID, st)
	w.doProbe(context.Background())
	evs := rec.list()
	if len(evs) != 1 || !strings.HasPrefix(evs[0].msg, "Readiness probe failed: dial tcp 127.0.0.1:") {
		t.Errorf("events = %+v", evs)
	}
	if ex.count() != 0 {
		t.Error("a TCP probe ran exec")
	}
}

func TestRuntimeID(t *testing.T) {
	for in, want := range map[string]string{
		"containerd://abc": "abc",
		"docker://abc":     "abc",
		"abc":              "abc",
		"":                 "",
	} {
		if got := runtimeID(in); got != want {
			t.Errorf("runtimeID(%q) = %q, want %q", in, got, want)
		}
	}
}
