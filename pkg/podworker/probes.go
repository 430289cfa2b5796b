package podworker

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/nodeagent/nodeagent/pkg/podtrace"
	"github.com/nodeagent/nodeagent/pkg/podutil"
	"github.com/nodeagent/nodeagent/pkg/probe"
	"github.com/nodeagent/nodeagent/pkg/runtime"
)

// ProbeResults is what the planner reads of the probe workers' cache.
type ProbeResults interface {
	Get(k probe.Kind, containerID string) (probe.Result, bool)
}

// probeKill says whether a running container fails its liveness or
// startup probe, with upstream's Killing message and the grace period the
// probe sets (nil: the pod's).
func probeKill(c *v1.Container, cs *runtime.ContainerStatus, probes ProbeResults) (string, *int64, bool) {
	if probes == nil {
		return "", nil, false
	}
	if r, ok := probes.Get(probe.Liveness, cs.ID); ok && r == probe.Failure {
		return fmt.Sprintf("Container %s failed liveness probe", c.Name), probeGrace(c.LivenessProbe), true
	}
	if r, ok := probes.Get(probe.Startup, cs.ID); ok && r == probe.Failure {
		return fmt.Sprintf("Container %s failed startup probe", c.Name), probeGrace(c.StartupProbe), true
	}
	return "", nil, false
}

func probeGrace(p *v1.Probe) *int64 {
	if p == nil {
		return nil
	}
	return p.TerminationGracePeriodSeconds
}

// execer is the runtime's ExecSync, which probes and hooks need; a runtime
// without it (unit-test fakes) runs neither exec probes nor exec hooks.
func execer(rt runtime.Runtime) probe.Execer {
	if ex, ok := rt.(probe.Execer); ok {
		return ex
	}
	return noExec{}
}

type noExec struct{}

func (noExec) ExecSync(context.Context, string, []string, time.Duration) (*runtime.ExecResult, error) {
	return nil, fmt.Errorf("the container runtime does not support exec")
}

// runPostStart runs the container's postStart hook right after it
// started; a failure is reported as upstream's FailedPostStartHook, the
// container is killed and waits with PostStartHookError.
func (w *worker) runPostStart(ctx context.Context, pod *v1.Pod, c *v1.Container, id string, podIP string) bool {
	if c.Lifecycle == nil || c.Lifecycle.PostStart == nil {
		return true
	}
	start := w.d.now()
	msg, err := w.d.hooks.Run(ctx, pod, c, id, podIP, c.Lifecycle.PostStart)
	w.step(pod, podtrace.Step{Name: podtrace.StepPostStart, Container: c.Name, Start: start, Detail: hookKind(c.Lifecycle.PostStart)}, err)
	if err == nil {
		return true
	}
	w.log.Warn("postStart hook failed", "container", c.Name, "err", err)
	w.d.events.Eventf(containerRef(pod, c), v1.EventTypeWarning, "FailedPostStartHook", "%s", msg)
	w.killContainers(ctx, pod, map[string]KillReason{id: {Name: c.Name, Message: "FailedPostStartHook"}}, gracePeriod(pod))
	w.setWaiting(c.Name, Waiting{"PostStartHookError", msg})
	return false
}

// runPreStop runs the container's preStop hook within the grace period and
// returns what is left of it for the stop (at least minGracePeriod), as
// upstream's killContainer. A failure is reported as FailedPreStopHook and
// the stop goes on.
func (w *worker) runPreStop(ctx context.Context, pod *v1.Pod, name, id string, grace int64) int64 {
	c := podutil.FindContainer(pod, name)
	if c == nil || c.Lifecycle == nil || c.Lifecycle.PreStop == nil || grace <= 0 {
		return grace
	}
	start := time.Now()
	hctx, cancel := context.WithTimeout(ctx, time.Duration(grace)*time.Second)
	defer cancel()
	podIP := ""
	if s := w.Status(); s != nil {
		podIP = s.PodIP
	}
	if msg, err := w.d.hooks.Run(hctx, pod, c, id, podIP, c.Lifecycle.PreStop); err != nil {
		w.log.Warn("preStop hook failed", "container", name, "err", err)
		w.d.events.Eventf(containerRef(pod, c), v1.EventTypeWarning, "FailedPreStopHook", "%s", msg)
	}
	return graceLeft(grace, time.Since(start))
}

// graceLeft is what remains of a grace period after a preStop hook ran
// for elapsed (whole seconds, as upstream counts), never below the
// kubelet's minimum.
func graceLeft(grace int64, elapsed time.Duration) int64 {
	return max(grace-int64(elapsed.Seconds()), minGracePeriod)
}
