package probe

import (
	"context"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/nodeagent/nodeagent/pkg/podutil"
)

// worker probes one container of one pod for one kind until stopped. Its
// fields are owned by its goroutine; it reads the pod's latest status from
// the manager.
type worker struct {
	m         *Manager
	key       workerKey
	pod       *v1.Pod
	container *v1.Container
	spec      *v1.Probe
	stop      chan struct{}
	trigger   chan struct{}

	containerID string // the instance being probed ("" before one runs)
	onHold      bool   // a liveness/startup failure awaits a new container
	lastResult  Result
	resultRun   int
}

func (w *worker) run(ctx context.Context) {
	defer w.m.workerDone(w)
	period := time.Duration(w.spec.PeriodSeconds) * time.Second
	if period <= 0 {
		period = 10 * time.Second
	}
	// Right after an agent (re)start every worker would probe at once:
	// spread the first probes over one period, as upstream.
	if w.m.clock.Since(w.m.start) < period {
		select {
		case <-w.m.clock.After(w.m.jitter(period)):
		case <-w.stop:
			return
		case <-ctx.Done():
			return
		}
	}
	ticker := w.m.clock.NewTicker(period)
	defer ticker.Stop()
	for w.doProbe(ctx) {
		select {
		case <-w.stop:
			return
		case <-ctx.Done():
			return
		case <-ticker.C():
		case <-w.trigger:
		}
	}
}

// doProbe probes once if the container is in a state to be probed and
// records the result once its threshold is reached. It returns false when
// the worker should end (the pod finished, or its container exited and
// will not be restarted).
func (w *worker) doProbe(ctx context.Context) bool {
	start := w.m.clock.Now()
	status, ok := w.m.podStatus(w.key.uid)
	if !ok {
		return true // not synced yet
	}
	if status.Phase == v1.PodSucceeded || status.Phase == v1.PodFailed {
		return false
	}
	c, ok := containerStatus(status, w.container.Name)
	if !ok || c.ContainerID == "" {
		return true // not created yet
	}
	if c.ContainerID != w.containerID {
		w.m.forget(w.key.kind, w.containerID)
		w.containerID = c.ContainerID
		w.m.set(w, initialResult(w.key.kind))
		w.onHold, w.resultRun = false, 0 // a new instance starts its own run
	}
	if w.onHold {
		return true
	}
	if c.State.Running == nil {
		w.m.set(w, Failure)
		// Stop only once the container is not restarted: its own
		// restartPolicy and rules (KEP-5307), else the pod's, decide.
		t := c.State.Terminated
		return t == nil || podutil.ContainerShouldRestart(w.container, &w.pod.Spec, t.ExitCode)
	}
	if w.m.clock.Since(c.State.Running.StartedAt.Time) < time.Duration(w.spec.InitialDelaySeconds)*time.Second {
		return true
	}
	started := c.Started != nil && *c.Started
	if started == (w.key.kind == Startup) {
		return true // startup probes run until started, the others after
	}
	result, err := w.m.prober.probe(ctx, w.key.kind, w.pod, status.PodIP, w.container, runtimeID(w.containerID))
	if err != nil {
		return true // an error says nothing of the container: keep the last result
	}
	w.m.metrics.ProbeRun(string(w.key.kind), resultLabel(result), w.pod, w.container.Name, w.m.clock.Since(start))
	w.count(result)
	return true
}

// count applies the thresholds: a result is recorded after successThreshold
// successes or failureThreshold failures in a row; a liveness or startup
// failure holds the worker until the container is replaced.
func (w *worker) count(r Result) {
	if r == w.lastResult {
		w.resultRun++
	} else {
		w.lastResult, w.resultRun = r, 1
	}
	if (r == Failure && w.resultRun < int(w.spec.FailureThreshold)) ||
		(r == Success && w.resultRun < int(w.spec.SuccessThreshold)) {
		return
	}
	w.m.set(w, r)
	if r == Failure && w.key.kind != Readiness {
		w.onHold, w.resultRun = true, 0
	}
}

func containerStatus(s *v1.PodStatus, name string) (*v1.ContainerStatus, bool) {
	for _, list := range [][]v1.ContainerStatus{s.ContainerStatuses, s.InitContainerStatuses} {
		for i := range list {
			if list[i].Name == name {
				return &list[i], true
			}
		}
	}
	return nil, false
}

// runtimeID strips the "containerd://" scheme of a status container ID.
func runtimeID(id string) string {
	if i := strings.Index(id, "://"); i >= 0 {
		return id[i+3:]
	}
	return id
}
