package diagnose

import (
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// podSteps are the kubelet's pod-level failures before any container
// starts, with what each means.
var podSteps = map[string]string{
	"FailedMount":                   "cannot mount its volumes",
	"FailedCreatePodSandBox":        "cannot create its sandbox",
	"NetworkNotReady":               "waits for the pod network, which is not ready",
	"FailedToCreatePodContainer":    "cannot create its pod cgroup",
	"FailedPrepareDynamicResources": "cannot prepare its dynamic resources",
}

// podSetUp: no container is to blame, so the kubelet is at a pod-level
// step (sandbox, pod network, cgroup, volumes) or has not got to the
// containers yet. A pod-level failure counts unless a container event
// came after it (the kubelet got past that step).
func podSetUp(c *check) (Diagnosis, bool) {
	if allStarted(c.pod) {
		return Diagnosis{}, false
	}
	reasons := make([]string, 0, len(podSteps))
	for r := range podSteps {
		reasons = append(reasons, r)
	}
	status := c.status(waitingReason(c.pod))
	failed := c.events.latest(c.podLevel(reasons...))
	if failed != nil && !c.events.after(failed, c.anyContainer()) {
		return Diagnosis{Component: Kubelet, Evidence: []string{describeEvent(failed)},
			Summary: fmt.Sprintf("Pod %s is %s: %s %s", c.key, status, c.kubeletOn(), podSteps[failed.Reason])}, true
	}
	d := Diagnosis{Component: Kubelet,
		Summary: fmt.Sprintf("Pod %s is %s: %s is still setting it up, with no failure reported", c.key, status, c.kubeletOn())}
	if last := c.events.latest(c.aboutPod); last != nil {
		d.Evidence = append(d.Evidence, "last "+describeEvent(last))
	}
	return d, true
}

// allStarted: every container has started at least once.
func allStarted(p *v1.Pod) bool {
	if len(p.Status.ContainerStatuses) < len(p.Spec.Containers) {
		return false
	}
	for _, cs := range p.Status.ContainerStatuses {
		if cs.State.Running == nil && cs.State.Terminated == nil && cs.LastTerminationState.Terminated == nil {
			return false
		}
	}
	return true
}

// waitingReason is kubectl's status word for a pod whose containers wait:
// the first waiting reason of a container.
func waitingReason(p *v1.Pod) string {
	for _, list := range [][]v1.ContainerStatus{p.Status.InitContainerStatuses, p.Status.ContainerStatuses} {
		for _, cs := range list {
			if w := cs.State.Waiting; w != nil && w.Reason != "" {
				return w.Reason
			}
		}
	}
	return ""
}

// readinessGates: the containers are ready, the pod's readiness gates
// are not; whoever owns their conditions has not set them True.
func readinessGates(c *check) (Diagnosis, bool) {
	cond := podCondition(c.pod, v1.PodReady)
	if cond == nil || cond.Status == v1.ConditionTrue || cond.Reason != "ReadinessGatesNotReady" {
		return Diagnosis{}, false
	}
	var gates []string
	for _, g := range c.pod.Spec.ReadinessGates {
		if gc := podCondition(c.pod, g.ConditionType); gc == nil || gc.Status != v1.ConditionTrue {
			gates = append(gates, string(g.ConditionType))
		}
	}
	return Diagnosis{Component: ReadinessGate, Evidence: []string{describePodCondition(cond)},
		Summary: fmt.Sprintf("Pod %s is Running but not Ready: its containers are ready, but the condition of its readiness gate %s is not True", c.key, strings.Join(gates, ", "))}, true
}
