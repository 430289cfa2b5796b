package diagnose

import (
	"fmt"
	"regexp"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// defaultScheduler is the scheduler a pod without spec.schedulerName
// gets, ours among them.
const defaultScheduler = v1.DefaultSchedulerName

// reasonWaitForFirstConsumer is the binder's event on a claim that waits
// for its pod to be scheduled: not a cause by itself.
const reasonWaitForFirstConsumer = "WaitForFirstConsumer"

// unscheduled: the pod has no node. In the order the scheduler checks:
// scheduling gates, the pod's claims, then the scheduler's own message.
func unscheduled(c *check) (Diagnosis, bool) {
	p := c.pod
	if p.Spec.NodeName != "" {
		return Diagnosis{}, false
	}
	if d, ok := c.schedulingGated(); ok {
		return d, true
	}
	failed := c.events.latest(c.podLevel("FailedScheduling"))
	cond := podCondition(p, v1.PodScheduled)
	var ev []string
	if failed != nil {
		ev = append(ev, describeEvent(failed))
	}
	if cond != nil && cond.Status == v1.ConditionFalse && (failed == nil || cond.Message != failed.Message) {
		ev = append(ev, describePodCondition(cond))
	}
	if d, ok := c.claimProblem(ev); ok {
		return d, true
	}
	if failed != nil || (cond != nil && cond.Status == v1.ConditionFalse) {
		return Diagnosis{Component: Scheduler, Evidence: append(ev, c.requestsFor(schedulerMessage(cond, failed))...),
			Summary: fmt.Sprintf("Pod %s is Pending: the scheduler found no node that fits it", c.key)}, true
	}
	return c.notYetScheduled(), true
}

// schedulerMessage is the scheduler's last word: the PodScheduled
// condition's message (never truncated), else the event's.
func schedulerMessage(cond *v1.PodCondition, failed *v1.Event) string {
	if cond != nil && cond.Status == v1.ConditionFalse && cond.Message != "" {
		return cond.Message
	}
	if failed != nil {
		return failed.Message
	}
	return ""
}

// schedulingGated: the scheduler leaves a pod with gates alone.
func (c *check) schedulingGated() (Diagnosis, bool) {
	gates := c.pod.Spec.SchedulingGates
	if len(gates) == 0 {
		return Diagnosis{}, false
	}
	var names []string
	for _, g := range gates {
		names = append(names, g.Name)
	}
	var ev []string
	if cond := podCondition(c.pod, v1.PodScheduled); cond != nil {
		ev = append(ev, describePodCondition(cond))
	}
	return Diagnosis{Component: Scheduler, Evidence: ev,
		Summary: fmt.Sprintf("Pod %s is Pending: the scheduler waits for its scheduling gates to be removed (%s)", c.key, strings.Join(names, ", "))}, true
}

// notYetScheduled: no attempt recorded, either not yet or because no
// scheduler of the pod's schedulerName runs.
func (c *check) notYetScheduled() Diagnosis {
	name := c.pod.Spec.SchedulerName
	if name != "" && name != defaultScheduler {
		return Diagnosis{Component: Scheduler, Evidence: []string{fmt.Sprintf("spec.schedulerName %q", name)},
			Summary: fmt.Sprintf("Pod %s is Pending: it waits for scheduler %q, which has recorded no attempt (the bundled scheduler is %q)", c.key, name, defaultScheduler)}
	}
	return Diagnosis{Component: Scheduler,
		Summary: fmt.Sprintf("Pod %s is Pending: it waits for the scheduler, which has recorded no attempt yet", c.key)}
}

// claimProblem: a claim the pod names is missing, lost or not bound; the
// scheduler refuses the pod until it is (upstream's VolumeBinding
// PreFilter). A claim that waits for its first consumer is not a cause.
func (c *check) claimProblem(schedEvidence []string) (Diagnosis, bool) {
	for _, name := range ClaimNames(c.pod) {
		claim, ok := c.in.Claims[name]
		switch {
		case !ok:
			return Diagnosis{Component: Scheduler, Evidence: schedEvidence,
				Summary: fmt.Sprintf("Pod %s is Pending: the scheduler cannot place it because its PersistentVolumeClaim %q does not exist", c.key, name)}, true
		case claim.DeletionTimestamp != nil:
			return Diagnosis{Component: Scheduler, Evidence: schedEvidence,
				Summary: fmt.Sprintf("Pod %s is Pending: the scheduler cannot place it because its PersistentVolumeClaim %q is being deleted", c.key, name)}, true
		case claim.Status.Phase == v1.ClaimBound:
			continue
		}
		last := c.events.latest(c.ofClaim(name))
		if claim.Status.Phase != v1.ClaimLost && last != nil && last.Reason == reasonWaitForFirstConsumer {
			continue
		}
		ev := []string{fmt.Sprintf("claim %s phase %s", name, claimPhase(claim))}
		if last != nil {
			ev = append(ev, "claim "+describeEvent(last))
		}
		return Diagnosis{Component: Scheduler, Evidence: append(ev, schedEvidence...),
			Summary: fmt.Sprintf("Pod %s is Pending: the scheduler waits for its PersistentVolumeClaim %q, which is not bound to a volume (%s)", c.key, name, claimPhase(claim))}, true
	}
	return Diagnosis{}, false
}

func claimPhase(claim *v1.PersistentVolumeClaim) v1.PersistentVolumeClaimPhase {
	if claim.Status.Phase == "" {
		return v1.ClaimPending
	}
	return claim.Status.Phase
}

// insufficient finds the resources of the scheduler's "Insufficient cpu"
// reasons.
var insufficient = regexp.MustCompile(`Insufficient ([A-Za-z0-9./_-]+)`)

// requestsFor says what the pod requests of each resource the scheduler's
// message finds insufficient: the other half of the comparison.
func (c *check) requestsFor(msg string) []string {
	var out []string
	seen := map[string]bool{}
	for _, m := range insufficient.FindAllStringSubmatch(msg, -1) {
		name := strings.TrimRight(m[1], ".") // the message's full stop
		if seen[name] {
			continue
		}
		seen[name] = true
		q := podRequest(c.pod, v1.ResourceName(name))
		out = append(out, fmt.Sprintf("the pod requests %s: %s", name, q.String()))
	}
	return out
}

// podRequest is the pod's request of a resource as the scheduler roughly
// counts it: pod-level resources when set, else the larger of the sum over
// its containers and sidecars and its largest init container, plus the
// overhead.
func podRequest(p *v1.Pod, name v1.ResourceName) resource.Quantity {
	if p.Spec.Resources != nil {
		if q, ok := p.Spec.Resources.Requests[name]; ok {
			return q
		}
	}
	var sum resource.Quantity
	for _, ctr := range p.Spec.Containers {
		sum.Add(ctr.Resources.Requests[name])
	}
	maxInit := resource.Quantity{}
	for _, ctr := range p.Spec.InitContainers {
		q := ctr.Resources.Requests[name]
		if ctr.RestartPolicy != nil && *ctr.RestartPolicy == v1.ContainerRestartPolicyAlways {
			sum.Add(q)
			continue
		}
		if q.Cmp(maxInit) > 0 {
			maxInit = q
		}
	}
	if maxInit.Cmp(sum) > 0 {
		sum = maxInit
	}
	if p.Spec.Overhead != nil {
		sum.Add(p.Spec.Overhead[name])
	}
	return sum
}
