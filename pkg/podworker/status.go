package podworker

import (
	"fmt"
	"slices"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	criv1 "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodeagent/nodeagent/pkg/podutil"
	"github.com/nodeagent/nodeagent/pkg/podworker/criconfig"
	"github.com/nodeagent/nodeagent/pkg/runtime"
)

// Waiting is why a container is not running, recorded by the executor
// (ErrImagePull, CrashLoopBackOff, CreateContainerConfigError...).
type Waiting struct {
	Reason  string
	Message string
}

// StatusInput is everything the pod's API status is generated from.
type StatusInput struct {
	Pod     *v1.Pod
	Runtime *runtime.PodStatus
	Old     *v1.PodStatus      // previous status, for transition times
	Waiting map[string]Waiting // container name -> recorded reason
	HostIP  string
	// RuntimeName prefixes container IDs ("containerd://<id>").
	RuntimeName string
	StartTime   time.Time
	Now         time.Time
	// Terminal is set once the pod has finished for good (all containers
	// done and none will restart); its phase no longer moves.
	Terminal bool
	// TermMessage reads a finished container's termination message.
	TermMessage func(c *v1.Container, cs *runtime.ContainerStatus) string
	// Probes, when set, fills the containers' Started and Ready from the
	// probe results (before the pod's conditions are derived from them);
	// Results tells whether sidecars passed their startup probes.
	Probes  func(pod *v1.Pod, s *v1.PodStatus)
	Results ProbeResults
}

// GenerateStatus computes the pod's API status the way the kubelet does.
func GenerateStatus(in StatusInput) v1.PodStatus {
	pod := in.Pod
	s := v1.PodStatus{
		HostIP:   in.HostIP,
		QOSClass: criconfig.QOSClass(pod),
	}
	if in.HostIP != "" {
		s.HostIPs = []v1.HostIP{{IP: in.HostIP}}
	}
	if !in.StartTime.IsZero() {
		t := metav1.NewTime(in.StartTime)
		s.StartTime = &t
	}
	var sandboxIPs []string
	if sb := latestSandbox(in.Runtime); sb != nil {
		sandboxIPs = sb.IPs
	}
	// A hostNetwork pod's are the node's, from the start and after its
	// sandbox stopped (a stopped sandbox reports no network).
	if ips := criconfig.PodIPs(pod, in.HostIP, sandboxIPs); len(ips) > 0 {
		s.PodIP = ips[0]
		for _, ip := range ips {
			s.PodIPs = append(s.PodIPs, v1.PodIP{IP: ip})
		}
	}
	// The kubelet's default waiting reason for containers not created yet.
	waitReason := "ContainerCreating"
	if len(pod.Spec.InitContainers) > 0 {
		waitReason = "PodInitializing"
	}
	s.InitContainerStatuses = containerStatuses(in, pod.Spec.InitContainers, waitReason, true)
	s.ContainerStatuses = containerStatuses(in, pod.Spec.Containers, waitReason, false)
	if len(pod.Spec.EphemeralContainers) > 0 {
		s.EphemeralContainerStatuses = containerStatuses(in, ephemeralContainers(pod), "ContainerCreating", false)
		for i := range s.EphemeralContainerStatuses {
			s.EphemeralContainerStatuses[i].Ready = false // never probed, never counted
		}
	}
	s.Phase = podPhase(pod, initDone(pod, in.Runtime, in.Results), s.InitContainerStatuses, s.ContainerStatuses)
	if in.Old != nil && isTerminal(in.Old.Phase) {
		s.Phase = in.Old.Phase // a terminal pod never comes back
	}
	if in.Probes != nil && !in.Terminal {
		in.Probes(pod, &s)
	}
	s.Conditions = conditions(in, s)
	return s
}

func isTerminal(p v1.PodPhase) bool { return p == v1.PodSucceeded || p == v1.PodFailed }

func latestSandbox(st *runtime.PodStatus) *runtime.SandboxStatus {
	if st == nil || len(st.Sandboxes) == 0 {
		return nil
	}
	return st.Sandboxes[0]
}

func containerStatuses(in StatusInput, specs []v1.Container, waitReason string, init bool) []v1.ContainerStatus {
	if len(specs) == 0 {
		return nil
	}
	out := make([]v1.ContainerStatus, 0, len(specs))
	for i := range specs {
		out = append(out, containerStatus(in, &specs[i], waitReason, init))
	}
	return out
}

func containerStatus(in StatusInput, c *v1.Container, waitReason string, init bool) v1.ContainerStatus {
	cs := v1.ContainerStatus{Name: c.Name, Image: c.Image}
	rt := in.Runtime.Latest(c.Name)
	if rt != nil {
		cs.State = runtimeState(in, c, rt)
		cs.RestartCount = int32(rt.RestartCount)
		cs.ContainerID = containerID(in, rt.ID)
		cs.ImageID = rt.ImageRef
		cs.User = containerUser(rt.User)
		if prev := in.Runtime.Previous(c.Name); prev != nil && prev.State == criv1.ContainerState_CONTAINER_EXITED {
			cs.LastTerminationState = runtimeState(in, c, prev)
		}
	}
	running := rt != nil && rt.State == criv1.ContainerState_CONTAINER_RUNNING
	w, recorded := in.Waiting[c.Name]
	switch {
	case running:
	case recorded && !in.Terminal:
		// A finished container about to restart shows Waiting, its exit in lastState.
		if rt != nil && rt.State == criv1.ContainerState_CONTAINER_EXITED {
			cs.LastTerminationState = cs.State
		}
		cs.State = v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: w.Reason, Message: w.Message}}
	case rt == nil:
		// As the kubelet's convertToAPIContainerStatuses: a container the
		// runtime no longer has (removed by garbage collection) keeps its
		// last terminated status, or else its restarts and last state.
		if old := oldContainerStatus(in.Old, c.Name); old != nil && old.State.Terminated != nil {
			return *old.DeepCopy()
		} else if old != nil {
			cs.RestartCount, cs.LastTerminationState = old.RestartCount, *old.LastTerminationState.DeepCopy()
		}
		cs.State = v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: waitReason}}
	}
	started := running
	cs.Started = &started
	// A running container is started and ready unless its probes say
	// otherwise (StatusInput.Probes); an init container is ready once it
	// has succeeded.
	cs.Ready = running && !in.Terminal
	if init && !podutil.IsSidecar(c) {
		cs.Ready = succeeded(rt)
	}
	return cs
}

// oldContainerStatus is the named container's status in old (names are
// unique across init, app and ephemeral containers), nil if none.
func oldContainerStatus(old *v1.PodStatus, name string) *v1.ContainerStatus {
	if old == nil {
		return nil
	}
	for _, list := range [][]v1.ContainerStatus{old.InitContainerStatuses, old.ContainerStatuses, old.EphemeralContainerStatuses} {
		for i := range list {
			if list[i].Name == name {
				return &list[i]
			}
		}
	}
	return nil
}

// containerUser is the kubelet's convertContainerUser: the identity the
// runtime reports, nil when it reports none.
func containerUser(u *criv1.ContainerUser) *v1.ContainerUser {
	if u == nil {
		return nil
	}
	out := &v1.ContainerUser{}
	if l := u.GetLinux(); l != nil {
		out.Linux = &v1.LinuxContainerUser{UID: l.GetUid(), GID: l.GetGid(), SupplementalGroups: l.GetSupplementalGroups()}
	}
	return out
}

func containerID(in StatusInput, id string) string {
	name := in.RuntimeName
	if name == "" {
		name = "containerd"
	}
	return name + "://" + id
}

func runtimeState(in StatusInput, c *v1.Container, rt *runtime.ContainerStatus) v1.ContainerState {
	switch rt.State {
	case criv1.ContainerState_CONTAINER_RUNNING:
		return v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: metav1.NewTime(rt.StartedAt)}}
	case criv1.ContainerState_CONTAINER_CREATED:
		return v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "ContainerCreating"}}
	case criv1.ContainerState_CONTAINER_EXITED:
		t := &v1.ContainerStateTerminated{
			ExitCode:    rt.ExitCode,
			Reason:      rt.Reason,
			Message:     rt.Message,
			StartedAt:   metav1.NewTime(rt.StartedAt),
			FinishedAt:  metav1.NewTime(rt.FinishedAt),
			ContainerID: containerID(in, rt.ID),
		}
		if t.Reason == "" {
			t.Reason = "Error"
			if t.ExitCode == 0 {
				t.Reason = "Completed"
			}
		}
		if in.TermMessage != nil {
			if msg := in.TermMessage(c, rt); msg != "" {
				t.Message = msg
			}
		}
		return v1.ContainerState{Terminated: t}
	}
	return v1.ContainerState{Terminated: &v1.ContainerStateTerminated{
		ExitCode: 137, Reason: "ContainerStatusUnknown",
		Message: "The container could not be located when the pod was terminated",
	}}
}

// podPhase follows the kubelet's getPhase (with ContainerRestartRules): a
// container that stopped counts as restarting or done by its own
// restartPolicy and rules on its exit code, else the pod's. An initialized
// pod's init containers no longer count (their records may be gone).
func podPhase(pod *v1.Pod, initialized bool, initStatuses, statuses []v1.ContainerStatus) v1.PodPhase {
	if initialized {
		initStatuses = nil
	}
	pendingInit, failedInit, initFailedForGood := countInits(pod, initStatuses)
	if initFailedForGood > 0 {
		return v1.PodFailed
	}
	var running, waiting, stopped, stoppedForGood, succeededN int
	for _, s := range statuses {
		t := s.State.Terminated
		switch {
		case s.State.Running != nil:
			running++
			continue
		case t == nil && s.State.Waiting != nil:
			t = s.LastTerminationState.Terminated
		}
		if t == nil {
			waiting++
			continue
		}
		stopped++
		if t.ExitCode == 0 {
			succeededN++
		}
		if !podutil.ContainerShouldRestart(podutil.FindContainer(pod, s.Name), &pod.Spec, t.ExitCode) {
			stoppedForGood++
		}
	}
	switch {
	case pendingInit > 0 || failedInit > 0 || waiting > 0:
		return v1.PodPending
	case running > 0:
		return v1.PodRunning
	case stopped > 0 && stopped != stoppedForGood:
		return v1.PodRunning // at least one is restarting
	case stopped > 0 && stopped == succeededN:
		return v1.PodSucceeded
	case stopped > 0:
		return v1.PodFailed
	}
	return v1.PodPending
}

// countInits counts the init containers still to run, those that failed
// and are restarted, and those that failed and are not (their own
// restartPolicy and rules, else the pod's, say so).
func countInits(pod *v1.Pod, initStatuses []v1.ContainerStatus) (pending, failed, failedForGood int) {
	sidecars := sidecarNames(pod)
	for _, s := range initStatuses {
		t := s.State.Terminated
		if t == nil && s.State.Waiting != nil {
			t = s.LastTerminationState.Terminated
		}
		switch {
		case sidecars[s.Name]:
			pending++ // restarted whatever its exit: pending until initialized
		case t == nil:
			pending++
		case t.ExitCode == 0:
		case podutil.ContainerShouldRestart(podutil.FindContainer(pod, s.Name), &pod.Spec, t.ExitCode):
			failed++
		default:
			failedForGood++
		}
	}
	return pending, failed, failedForGood
}

func conditions(in StatusInput, s v1.PodStatus) []v1.PodCondition {
	completed := s.Phase == v1.PodSucceeded
	sandboxReady := in.Runtime.ActiveSandbox() != nil
	var notInit, notReady []string
	sidecars := sidecarNames(in.Pod)
	for _, cs := range s.InitContainerStatuses {
		switch {
		case sidecars[cs.Name]:
			if cs.Started == nil || !*cs.Started {
				notInit = append(notInit, cs.Name)
			}
			if !cs.Ready { // sidecars count for the pod's readiness
				notReady = append(notReady, cs.Name)
			}
		case cs.State.Terminated == nil || cs.State.Terminated.ExitCode != 0:
			notInit = append(notInit, cs.Name)
		}
	}
	if initDone(in.Pod, in.Runtime, in.Results) {
		notInit = nil
	}
	for _, cs := range s.ContainerStatuses {
		if !cs.Ready {
			notReady = append(notReady, cs.Name)
		}
	}
	containersReady := readyCondition(v1.ContainersReady, notReady, s.Phase)
	conds := []v1.PodCondition{
		cond(v1.PodReadyToStartContainers, sandboxReady, "", ""),
		initCondition(notInit, completed),
		podReadyCondition(in.Pod, containersReady),
		containersReady,
		cond(v1.PodScheduled, true, "", ""),
	}
	keepTransitionTimes(conds, in.Old, in.Now)
	return append(conds, foreignConditions(in.Pod)...)
}

// foreignConditions are the pod's conditions the kubelet does not own, as
// the API last showed them: the kubelet copies them into the status it
// generates, and its readiness gates are read from them.
func foreignConditions(pod *v1.Pod) []v1.PodCondition {
	var out []v1.PodCondition
	for _, c := range pod.Status.Conditions {
		if !podutil.IsKubeletCondition(c.Type) {
			out = append(out, c)
		}
	}
	return out
}

// podReadyCondition is the kubelet's GeneratePodReadyCondition: Ready
// follows ContainersReady and, once the containers are ready, needs every
// readiness gate's condition to be True.
func podReadyCondition(pod *v1.Pod, containersReady v1.PodCondition) v1.PodCondition {
	if containersReady.Status != v1.ConditionTrue {
		return cond(v1.PodReady, false, containersReady.Reason, containersReady.Message)
	}
	foreign := foreignConditions(pod)
	var unready []string
	for _, g := range pod.Spec.ReadinessGates {
		i := slices.IndexFunc(foreign, func(c v1.PodCondition) bool { return c.Type == g.ConditionType })
		switch {
		case i < 0:
			unready = append(unready, fmt.Sprintf("corresponding condition of pod readiness gate %q does not exist.", g.ConditionType))
		case foreign[i].Status != v1.ConditionTrue:
			unready = append(unready, fmt.Sprintf("the status of pod readiness gate %q is not \"True\", but %v", g.ConditionType, foreign[i].Status))
		}
	}
	if len(unready) > 0 {
		return cond(v1.PodReady, false, "ReadinessGatesNotReady", strings.Join(unready, ", "))
	}
	return cond(v1.PodReady, true, "", "")
}

func cond(t v1.PodConditionType, ok bool, reason, msg string) v1.PodCondition {
	st := v1.ConditionFalse
	if ok {
		st = v1.ConditionTrue
	}
	return v1.PodCondition{Type: t, Status: st, Reason: reason, Message: msg}
}

func initCondition(notInit []string, completed bool) v1.PodCondition {
	if completed {
		return cond(v1.PodInitialized, true, "PodCompleted", "")
	}
	if len(notInit) > 0 {
		return cond(v1.PodInitialized, false, "ContainersNotInitialized",
			fmt.Sprintf("containers with incomplete status: [%s]", strings.Join(notInit, " ")))
	}
	return cond(v1.PodInitialized, true, "", "")
}

func readyCondition(t v1.PodConditionType, notReady []string, phase v1.PodPhase) v1.PodCondition {
	switch phase {
	case v1.PodSucceeded:
		return cond(t, false, "PodCompleted", "")
	case v1.PodFailed:
		return cond(t, false, "PodFailed", "")
	}
	if len(notReady) > 0 {
		return cond(t, false, "ContainersNotReady",
			fmt.Sprintf("containers with unready status: [%s]", strings.Join(notReady, " ")))
	}
	return cond(t, true, "", "")
}

// keepTransitionTimes carries lastTransitionTime over from the previous
// status while a condition's status is unchanged.
func keepTransitionTimes(conds []v1.PodCondition, old *v1.PodStatus, now time.Time) {
	prev := map[v1.PodConditionType]v1.PodCondition{}
	if old != nil {
		for _, c := range old.Conditions {
			prev[c.Type] = c
		}
	}
	for i := range conds {
		if p, ok := prev[conds[i].Type]; ok && p.Status == conds[i].Status {
			conds[i].LastTransitionTime = p.LastTransitionTime
			continue
		}
		conds[i].LastTransitionTime = metav1.NewTime(now)
	}
}
