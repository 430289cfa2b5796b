package diagnose

import (
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"

	"github.com/nodeagent/nodeagent/pkg/podutil"
)

// The components a Diagnosis names as holding the pod.
const (
	Scheduler = "scheduler"
	Kubelet   = "kubelet"
	Node      = "node"
	// ReadinessGate is whoever owns a readiness gate's condition (a
	// controller outside the node).
	ReadinessGate = "readiness gate"
	// None: nothing holds the pod (Running and Ready, or completed).
	None = ""
)

// Input is what the caller read from the API about one pod.
type Input struct {
	Pod *v1.Pod
	// Events are the events about the pod and about its claims, in any
	// order.
	Events []v1.Event
	// Node is the pod's node; nil if the pod is not bound or its node was
	// not found.
	Node *v1.Node
	// Claims are the PersistentVolumeClaims the pod names (ClaimNames), by
	// name; a name missing here was not found.
	Claims map[string]*v1.PersistentVolumeClaim
	// PreviousLogs are the last lines of the previous instance's log of
	// each restarted container (RestartedContainers), by container name.
	PreviousLogs map[string][]string
}

// Diagnosis says which component holds the pod and why.
type Diagnosis struct {
	Component string
	// Summary is one sentence naming the pod, its state and the cause.
	Summary string
	// Evidence is what the summary rests on: events, conditions, states,
	// log lines, each as the component wrote it.
	Evidence []string
}

// Paragraph is the diagnosis as one paragraph.
func (d Diagnosis) Paragraph() string {
	if len(d.Evidence) == 0 {
		return d.Summary + "."
	}
	return d.Summary + ". Evidence: " + strings.Join(d.Evidence, "; ") + "."
}

// Diagnose says why in.Pod is not Running and Ready, or that it is.
func Diagnose(in Input) Diagnosis {
	c := newCheck(in)
	for _, step := range []func(*check) (Diagnosis, bool){
		terminating, finished, unscheduled, nodeDown, containerProblem, podSetUp, readinessGates,
	} {
		if d, ok := step(c); ok {
			return c.withPressure(d)
		}
	}
	if isReady(in.Pod) {
		return c.withPressure(c.healthy())
	}
	if d, ok := c.pressure(); ok {
		return d
	}
	return c.notReady()
}

// ClaimNames are the PersistentVolumeClaims the pod names: its
// persistentVolumeClaim volumes and the claims of its ephemeral volumes
// (named <pod>-<volume>).
func ClaimNames(pod *v1.Pod) []string {
	var names []string
	for _, v := range pod.Spec.Volumes {
		switch {
		case v.PersistentVolumeClaim != nil:
			names = append(names, v.PersistentVolumeClaim.ClaimName)
		case v.Ephemeral != nil:
			names = append(names, pod.Name+"-"+v.Name)
		}
	}
	return names
}

// RestartedContainers are the containers (init containers first) whose
// previous instance terminated: those with a `logs --previous`.
func RestartedContainers(pod *v1.Pod) []string {
	var names []string
	for _, list := range [][]v1.ContainerStatus{pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses} {
		for _, cs := range list {
			if cs.LastTerminationState.Terminated != nil {
				names = append(names, cs.Name)
			}
		}
	}
	return names
}

// check is one diagnosis under way: the input and its events sorted.
type check struct {
	in     Input
	pod    *v1.Pod
	events eventList
	key    string // namespace/name
}

func newCheck(in Input) *check {
	return &check{in: in, pod: in.Pod, events: sortEvents(in.Events), key: in.Pod.Namespace + "/" + in.Pod.Name}
}

// kubeletOn names the kubelet of the pod's node.
func (c *check) kubeletOn() string { return "the kubelet on node " + c.pod.Spec.NodeName }

// status is the pod's phase with kubectl's reason in brackets where it
// says more (a container's waiting reason, Terminating).
func (c *check) status(reason string) string {
	phase := string(c.pod.Status.Phase)
	if phase == "" {
		phase = string(v1.PodPending)
	}
	if reason == "" || reason == phase {
		return phase
	}
	return phase + " (" + reason + ")"
}

// terminating: the pod is being deleted; the kubelet stops it.
func terminating(c *check) (Diagnosis, bool) {
	p := c.pod
	if p.DeletionTimestamp == nil {
		return Diagnosis{}, false
	}
	grace := ""
	if p.DeletionGracePeriodSeconds != nil {
		grace = fmt.Sprintf(" with a grace period of %ds", *p.DeletionGracePeriodSeconds)
	}
	ev := []string{fmt.Sprintf("deletionTimestamp %s", p.DeletionTimestamp.UTC().Format("2006-01-02T15:04:05Z"))}
	if k := c.events.latest(c.anyContainer("Killing")); k != nil {
		ev = append(ev, describeEvent(k))
	}
	if p.Spec.NodeName == "" {
		return Diagnosis{Component: None, Summary: fmt.Sprintf("Pod %s is being deleted%s", c.key, grace), Evidence: ev}, true
	}
	return Diagnosis{Component: Kubelet, Evidence: ev,
		Summary: fmt.Sprintf("Pod %s is %s: it is being deleted%s and %s stops its containers", c.key, c.status("Terminating"), grace, c.kubeletOn())}, true
}

// finished: the pod reached Succeeded or Failed and will not run again.
func finished(c *check) (Diagnosis, bool) {
	p := c.pod
	switch p.Status.Phase {
	case v1.PodSucceeded:
		return Diagnosis{Component: None, Summary: fmt.Sprintf("Pod %s has completed: phase Succeeded, every container exited 0", c.key),
			Evidence: terminatedStates(p)}, true
	case v1.PodFailed:
		ev := terminatedStates(p)
		summary := fmt.Sprintf("Pod %s has failed: phase Failed", c.key)
		if p.Status.Reason != "" {
			// Rejected at admission or evicted by the kubelet.
			summary = fmt.Sprintf("Pod %s has failed: %s set it Failed (%s)", c.key, c.kubeletOn(), p.Status.Reason)
			ev = append([]string{fmt.Sprintf("status reason %s: %q", p.Status.Reason, p.Status.Message)}, ev...)
		}
		return Diagnosis{Component: Kubelet, Summary: summary, Evidence: ev}, true
	}
	return Diagnosis{}, false
}

// terminatedStates describes each container that terminated.
func terminatedStates(p *v1.Pod) []string {
	var out []string
	for _, list := range [][]v1.ContainerStatus{p.Status.InitContainerStatuses, p.Status.ContainerStatuses} {
		for _, cs := range list {
			if t := cs.State.Terminated; t != nil {
				out = append(out, fmt.Sprintf("container %s terminated: %s", cs.Name, describeTerminated(t)))
			}
		}
	}
	return out
}

// healthy: Running and Ready.
func (c *check) healthy() Diagnosis {
	p := c.pod
	ready, restarts := 0, int32(0)
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Ready {
			ready++
		}
		restarts += cs.RestartCount
	}
	ev := []string{fmt.Sprintf("%d/%d containers ready", ready, len(p.Spec.Containers)), plural(int(restarts), "restart")}
	if p.Status.PodIP != "" {
		ev = append(ev, "pod IP "+p.Status.PodIP)
	}
	ev = append(ev, c.restarts()...)
	return Diagnosis{Component: None, Summary: fmt.Sprintf("Pod %s is Running and Ready on node %s", c.key, p.Spec.NodeName), Evidence: ev}
}

// notReady is the last resort: the Ready condition's own words.
func (c *check) notReady() Diagnosis {
	ev := []string{}
	if cond := podCondition(c.pod, v1.PodReady); cond != nil {
		ev = append(ev, describePodCondition(cond))
	}
	ev = append(ev, c.restarts()...)
	return Diagnosis{Component: Kubelet, Evidence: ev,
		Summary: fmt.Sprintf("Pod %s is %s and not Ready; %s has not reported why", c.key, c.status(""), c.kubeletOn())}
}

func isReady(p *v1.Pod) bool {
	cond := podCondition(p, v1.PodReady)
	return p.Status.Phase == v1.PodRunning && cond != nil && cond.Status == v1.ConditionTrue
}

func podCondition(p *v1.Pod, t v1.PodConditionType) *v1.PodCondition {
	return podutil.Condition(&p.Status, t)
}

func describePodCondition(c *v1.PodCondition) string {
	s := fmt.Sprintf("condition %s=%s", c.Type, c.Status)
	if c.Reason != "" {
		s += " " + c.Reason
	}
	if c.Message != "" {
		s += fmt.Sprintf(": %q", c.Message)
	}
	return s
}
