package podworker

import (
	"fmt"
	"sort"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	criv1 "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodeagent/nodeagent/pkg/podutil"
	"github.com/nodeagent/nodeagent/pkg/runtime"
)

// Plan is what one sync must do to move a pod toward its spec. It is
// computed without side effects by ComputePodActions and run by the
// executor.
type Plan struct {
	// KillPod stops every container and the sandbox first: the sandbox is
	// gone or changed, or the pod has nothing left to run.
	KillPod bool
	// CreateSandbox makes a new sandbox with attempt number Attempt.
	CreateSandbox bool
	Attempt       uint32
	// SandboxID is the ready sandbox containers start in (when not creating).
	SandboxID string
	// InitToStart is the index of the init container to start next, or -1.
	InitToStart int
	// ContainersToStart are indexes into spec.containers.
	ContainersToStart []int
	// SidecarsToStart are indexes into spec.initContainers of sidecars to
	// (re)start once the pod is initialized.
	SidecarsToStart []int
	// EphemeralToStart are indexes into spec.ephemeralContainers.
	EphemeralToStart []int
	// ContainersToKill maps a running container's ID to why it must stop.
	ContainersToKill map[string]KillReason
	// BackingOff maps a container name to the back-off it is waiting out.
	BackingOff map[string]time.Duration
	// RestartFrom maps the name of a container this plan starts while an
	// exited instance of it exists to that instance's exit: the executor
	// records the restart in the back-off from there (upstream's doBackOff
	// calls Next when it lets a start through).
	RestartFrom map[string]time.Time
	// InitFailed is set when an init container failed and is not restarted
	// (its restartPolicy and rules, else the pod's, say so).
	InitFailed bool
}

// KillReason says which container is stopped and why.
type KillReason struct {
	Name    string
	Message string
	// Grace overrides the pod's grace period (a probe's
	// terminationGracePeriodSeconds).
	Grace *int64
}

// BackoffChecker answers whether a restart keyed by id, for a container
// that finished at eventTime, must still wait, and for how long it waits.
type BackoffChecker interface {
	IsInBackOffSince(id string, eventTime time.Time) bool
	Get(id string) time.Duration
}

func (p Plan) String() string {
	var parts []string
	if p.KillPod {
		parts = append(parts, "killPod")
	}
	if p.CreateSandbox {
		parts = append(parts, fmt.Sprintf("createSandbox(attempt=%d)", p.Attempt))
	}
	if p.InitFailed {
		parts = append(parts, "initFailed")
	}
	if p.InitToStart >= 0 {
		parts = append(parts, fmt.Sprintf("startInit=%d", p.InitToStart))
	}
	if len(p.SidecarsToStart) > 0 {
		parts = append(parts, fmt.Sprintf("startSidecars=%v", p.SidecarsToStart))
	}
	if len(p.ContainersToStart) > 0 {
		parts = append(parts, fmt.Sprintf("start=%v", p.ContainersToStart))
	}
	if len(p.EphemeralToStart) > 0 {
		parts = append(parts, fmt.Sprintf("startEphemeral=%v", p.EphemeralToStart))
	}
	var kills []string
	for id, k := range p.ContainersToKill {
		kills = append(kills, fmt.Sprintf("%s(%.12s): %s", k.Name, id, k.Message))
	}
	sort.Strings(kills)
	if len(kills) > 0 {
		parts = append(parts, "kill="+strings.Join(kills, ";"))
	}
	var bo []string
	for name, d := range p.BackingOff {
		bo = append(bo, fmt.Sprintf("%s:%s", name, d))
	}
	sort.Strings(bo)
	if len(bo) > 0 {
		parts = append(parts, "backingOff="+strings.Join(bo, ","))
	}
	if len(parts) == 0 {
		return "nothing to do"
	}
	return strings.Join(parts, " ")
}

// Empty reports whether the plan changes nothing.
func (p Plan) Empty() bool {
	return !p.KillPod && !p.CreateSandbox && p.InitToStart < 0 && len(p.ContainersToStart) == 0 && len(p.SidecarsToStart) == 0 && len(p.EphemeralToStart) == 0 &&
		len(p.ContainersToKill) == 0 && len(p.BackingOff) == 0
}

// ComputePodActions decides what a sync must do, from the pod's spec, the
// runtime's view of it, the restart back-off and the probe results (nil:
// none). It is pure.
func ComputePodActions(pod *v1.Pod, st *runtime.PodStatus, bo BackoffChecker, probes ProbeResults) Plan {
	return planEphemeral(pod, st, computeActions(pod, st, bo, probes))
}

func computeActions(pod *v1.Pod, st *runtime.PodStatus, bo BackoffChecker, probes ProbeResults) Plan {
	p := Plan{InitToStart: -1, ContainersToKill: map[string]KillReason{}, BackingOff: map[string]time.Duration{}, RestartFrom: map[string]time.Time{}}
	create, attempt, sandboxID := sandboxChanged(pod, st)
	if create {
		return planNewSandbox(pod, st, bo, probes, attempt, p)
	}
	p.SandboxID = sandboxID

	if !initDone(pod, st, probes) {
		return planInit(pod, st, bo, probes, p)
	}
	keep := 0
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		cs := st.Latest(c.Name)
		if cs == nil || cs.State != criv1.ContainerState_CONTAINER_RUNNING {
			if cs != nil && cs.State == criv1.ContainerState_CONTAINER_UNKNOWN {
				p.ContainersToKill[cs.ID] = KillReason{Name: c.Name, Message: "Container is in unknown state, try killing it before removal"}
			}
			if shouldStart(pod, c, cs) && p.backOff(pod, c, lastExited(st, c.Name, ""), bo) {
				p.ContainersToStart = append(p.ContainersToStart, i)
			}
			continue
		}
		if k, restart, stop := checkRunning(c, cs, podutil.RestartsWithoutExitCode(c, &pod.Spec), probes); stop {
			p.ContainersToKill[cs.ID] = k
			if restart && p.backOff(pod, c, lastExited(st, c.Name, ""), bo) {
				p.ContainersToStart = append(p.ContainersToStart, i)
			}
			continue
		}
		keep++
	}
	if keep == 0 && len(p.ContainersToStart) == 0 && len(p.BackingOff) == 0 {
		p.KillPod = true // every container is done and none restarts (sidecars stop too)
		return p
	}
	return planSidecars(pod, st, bo, probes, p)
}

// checkRunning says whether a running container must stop: its definition
// changed (it restarts), or it fails its liveness or startup probe (it
// restarts if restarts says so). The restart is subject to the back-off
// like any other start (the caller's p.backOff).
func checkRunning(c *v1.Container, cs *runtime.ContainerStatus, restarts bool, probes ProbeResults) (KillReason, bool, bool) {
	if cs.Hash != runtime.HashContainer(c) && cs.Hash != runtime.HashContainerWithResources(c) {
		return KillReason{Name: c.Name, Message: fmt.Sprintf("Container %s definition changed, will be restarted", c.Name)}, true, true
	}
	msg, grace, failed := probeKill(c, cs, probes)
	if !failed {
		return KillReason{}, false, false
	}
	if restarts {
		msg += ", will be restarted"
	}
	return KillReason{Name: c.Name, Message: msg, Grace: grace}, restarts, true
}

// sandboxChanged reports whether a new sandbox is needed (none, not ready,
// several ready, network lost, or made for a different pod-level spec),
// the attempt number it gets, and the usable sandbox.
func sandboxChanged(pod *v1.Pod, st *runtime.PodStatus) (bool, uint32, string) {
	if len(st.Sandboxes) == 0 {
		return true, 0, ""
	}
	ready := 0
	for _, sb := range st.Sandboxes {
		if sb.State == criv1.PodSandboxState_SANDBOX_READY {
			ready++
		}
	}
	newest := st.Sandboxes[0]
	if ready > 1 || newest.State != criv1.PodSandboxState_SANDBOX_READY {
		return true, newest.Attempt + 1, newest.ID
	}
	if !pod.Spec.HostNetwork && len(newest.IPs) == 0 {
		return true, newest.Attempt + 1, newest.ID // network lost
	}
	if newest.Hash != "" && newest.Hash != runtime.HashSandbox(pod) {
		return true, newest.Attempt + 1, newest.ID // pod-level spec changed
	}
	return false, newest.Attempt, newest.ID
}

// planNewSandbox restarts the pod from scratch in a new sandbox, unless its
// restart policy says it has run for good.
func planNewSandbox(pod *v1.Pod, st *runtime.PodStatus, bo BackoffChecker, probes ProbeResults, attempt uint32, p Plan) Plan {
	p.KillPod = true
	if pod.Spec.RestartPolicy == v1.RestartPolicyNever && attempt != 0 && len(st.Containers) != 0 {
		return p
	}
	var toStart []int
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		if pod.Spec.RestartPolicy == v1.RestartPolicyOnFailure && succeeded(st.Latest(c.Name)) {
			continue
		}
		toStart = append(toStart, i)
	}
	if len(toStart) == 0 && initDone(pod, st, probes) {
		return p // initialised and nothing left to run: only kill
	}
	p.CreateSandbox, p.Attempt = true, attempt
	if len(pod.Spec.InitContainers) > 0 {
		// A new sandbox starts over from the first init container. Its
		// back-off is measured against its runs in the old sandbox here
		// only: upstream then purges them, so later syncs do not see them.
		c := &pod.Spec.InitContainers[0]
		if p.backOff(pod, c, lastExited(st, c.Name, ""), bo) {
			p.InitToStart = 0
		}
		return p
	}
	for _, i := range toStart {
		c := &pod.Spec.Containers[i]
		if p.backOff(pod, c, lastExited(st, c.Name, ""), bo) {
			p.ContainersToStart = append(p.ContainersToStart, i)
		}
	}
	return p
}

// initDone reports whether every init container has succeeded (a sidecar:
// has started) in the current sandbox. A pod whose app containers have run
// in that sandbox has finished its init phase, even if the init
// containers' records were garbage-collected since; containers of an
// earlier sandbox do not count: a new sandbox runs the init containers
// again.
func initDone(pod *v1.Pod, st *runtime.PodStatus, probes ProbeResults) bool {
	for i := range pod.Spec.Containers {
		if inCurrentSandbox(st, st.Latest(pod.Spec.Containers[i].Name)) {
			return true
		}
	}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		cs := st.Latest(c.Name)
		if !inCurrentSandbox(st, cs) {
			return false
		}
		if podutil.IsSidecar(c) && !sidecarStarted(c, cs, probes) || !podutil.IsSidecar(c) && !succeeded(cs) {
			return false
		}
	}
	return true
}

// inCurrentSandbox: the container ran in the pod's newest sandbox.
func inCurrentSandbox(st *runtime.PodStatus, cs *runtime.ContainerStatus) bool {
	if cs == nil {
		return false
	}
	return len(st.Sandboxes) == 0 || cs.SandboxID == "" || cs.SandboxID == st.Sandboxes[0].ID
}

// planInit advances the init containers strictly in order: a regular one
// must succeed, a sidecar must have started (and is restarted whenever it
// is not running) before the next one starts.
func planInit(pod *v1.Pod, st *runtime.PodStatus, bo BackoffChecker, probes ProbeResults, p Plan) Plan {
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		cs := st.Latest(c.Name)
		if cs != nil && !inCurrentSandbox(st, cs) {
			cs = nil // ran in an earlier sandbox: runs again in this one
		}
		running := cs != nil && cs.State == criv1.ContainerState_CONTAINER_RUNNING
		switch {
		case podutil.IsSidecar(c) && running:
			if k, restart, stop := checkRunning(c, cs, true, probes); stop {
				p.ContainersToKill[cs.ID] = k
				if restart && p.backOff(pod, c, lastExited(st, c.Name, st.Sandboxes[0].ID), bo) {
					p.InitToStart = i
				}
				return p
			}
			if sidecarStarted(c, cs, probes) {
				continue
			}
			return p // wait for its startup probe
		case podutil.IsSidecar(c):
		case succeeded(cs):
			continue
		case running:
			return p // wait for it to finish
		case cs != nil && cs.State == criv1.ContainerState_CONTAINER_UNKNOWN && !podutil.RestartsWithoutExitCode(c, &pod.Spec):
			p.InitFailed, p.KillPod = true, true
			return p
		case cs != nil && cs.State == criv1.ContainerState_CONTAINER_EXITED && !podutil.ContainerShouldRestart(c, &pod.Spec, cs.ExitCode):
			// Failed for good: its own restartPolicy and rules (KEP-5307),
			// else the pod's, say it does not run again.
			p.InitFailed, p.KillPod = true, true
			return p
		}
		if p.backOff(pod, c, lastExited(st, c.Name, st.Sandboxes[0].ID), bo) {
			p.InitToStart = i
		}
		return p
	}
	return p
}

func succeeded(cs *runtime.ContainerStatus) bool {
	return cs != nil && cs.State == criv1.ContainerState_CONTAINER_EXITED && cs.ExitCode == 0
}

// shouldStart applies the restart policy to a container that is not
// running: the container's own restartPolicy and restartPolicyRules on its
// exit code, else the pod's (upstream's ShouldContainerBeRestarted).
func shouldStart(pod *v1.Pod, c *v1.Container, cs *runtime.ContainerStatus) bool {
	if cs == nil || cs.State != criv1.ContainerState_CONTAINER_EXITED {
		return true // never ran (or never got past creation)
	}
	return podutil.ContainerShouldRestart(c, &pod.Spec, cs.ExitCode)
}

// backOff applies the restart back-off to a container the plan would
// start, as upstream's doBackOff does for every container SyncPod starts:
// it is measured from prev, the newest exited instance of that name (for a
// container killed in this same sync, the one before it), so a container
// whose probe kills it again and again backs off like one that crashes.
// It reports whether the start may go ahead; if it may and prev exists,
// the plan records prev's exit for the executor's Next.
func (p *Plan) backOff(pod *v1.Pod, c *v1.Container, prev *runtime.ContainerStatus, bo BackoffChecker) bool {
	if prev == nil {
		return true // never exited: no back-off, nothing to record
	}
	if bo != nil {
		if key := backoffKey(pod, c); bo.IsInBackOffSince(key, prev.FinishedAt) {
			if p.BackingOff == nil {
				p.BackingOff = map[string]time.Duration{}
			}
			p.BackingOff[c.Name] = bo.Get(key)
			return false
		}
	}
	if p.RestartFrom == nil {
		p.RestartFrom = map[string]time.Time{}
	}
	p.RestartFrom[c.Name] = prev.FinishedAt
	return true
}

// lastExited is the newest exited instance of the named container (of
// sandboxID only, when set), the one upstream's doBackOff measures from.
// Init containers pass the current sandbox: upstream removes their runs
// in older sandboxes once a new one is made.
func lastExited(st *runtime.PodStatus, name, sandboxID string) *runtime.ContainerStatus {
	for _, c := range st.Containers {
		if c.Name != name || c.State != criv1.ContainerState_CONTAINER_EXITED {
			continue
		}
		if sandboxID != "" && c.SandboxID != "" && c.SandboxID != sandboxID {
			continue
		}
		return c
	}
	return nil
}

// backoffKey includes the spec hash so that a changed container starts
// with a fresh back-off, as in the kubelet.
func backoffKey(pod *v1.Pod, c *v1.Container) string {
	return fmt.Sprintf("%s_%s_%s_%s_%s", pod.Name, pod.Namespace, pod.UID, c.Name, runtime.HashContainer(c))
}
