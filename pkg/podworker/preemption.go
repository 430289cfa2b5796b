package podworker

import (
	"errors"
	"fmt"
	"math"
	"strings"

	v1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/nodeagent/nodeagent/pkg/podutil"
)

// Critical pod admission, as the kubelet's CriticalPodAdmissionHandler
// (pkg/kubelet/preemption) recovers from a failed general filter: a
// critical pod (podutil.IsCritical) that fails only for want of resources
// is admitted once pods it may preempt are stopped to free them.

// The handler's reasons and messages (pkg/kubelet/events PreemptContainer,
// lifecycle UnexpectedAdmissionError, killPodNow's ExceededGracePeriod).
const (
	reasonPreempting             = "Preempting"
	msgPreempted                 = "Preempted in order to admit critical pod"
	msgPreemptedCondition        = "Pod was preempted by Kubelet to accommodate a critical pod."
	reasonUnexpectedAdmission    = "UnexpectedAdmissionError"
	msgUnexpectedAdmissionPrefix = "Unexpected error while attempting to recover from admission failure: "
	reasonExceededGracePeriod    = "ExceededGracePeriod"
	msgExceededGracePeriod       = "Container runtime did not kill the pod within specified grace period."
)

// resourceShortage is an InsufficientResourceError's figures: what the
// pod requests of one resource, what the admitted pods use, and the
// node's allocatable.
type resourceShortage struct {
	Resource                  v1.ResourceName
	Requested, Used, Capacity int64
}

// insufficientAmount is GetInsufficientAmount: what must be freed.
func (s resourceShortage) insufficientAmount() int64 { return s.Requested - (s.Capacity - s.Used) }

// requirement is an amount of one resource still to be freed.
type requirement struct {
	resource v1.ResourceName
	quantity int64
}

type requirements []requirement

// podRequest is GetResourceRequest: one pod's request of a resource as
// preemption counts it (milli-CPU, bytes; each pod takes one of "pods"),
// the overhead included when the request is not zero.
func podRequest(pod *v1.Pod, name v1.ResourceName) int64 {
	if name == v1.ResourcePods {
		return 1
	}
	q := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{ExcludeOverhead: true})[name]
	if o, ok := pod.Spec.Overhead[name]; ok && !q.IsZero() {
		q.Add(o)
	}
	if name == v1.ResourceCPU {
		return q.MilliValue()
	}
	return q.Value()
}

// subtract is what would remain to free once the pods are stopped.
func (rs requirements) subtract(pods ...*v1.Pod) requirements {
	var out requirements
	for _, r := range rs {
		left := r.quantity
		for _, p := range pods {
			if left -= podRequest(p, r.resource); left <= 0 {
				break
			}
		}
		if left > 0 {
			out = append(out, requirement{r.resource, left})
		}
	}
	return out
}

// distance is how far stopping the pod leaves each requirement from being
// met, as a share of it, squared and summed: every resource weighs the
// same whatever its unit.
func (rs requirements) distance(pod *v1.Pod) float64 {
	d := 0.0
	for _, r := range rs {
		if left := float64(r.quantity - podRequest(pod, r.resource)); left > 0 {
			d += math.Pow(left/float64(r.quantity), 2)
		}
	}
	return d
}

// String is upstream's toString, which its error messages quote.
func (rs requirements) String() string {
	var b strings.Builder
	b.WriteString("[")
	for _, r := range rs {
		fmt.Fprintf(&b, "(res: %v, q: %d), ", r.resource, r.quantity)
	}
	return b.String() + "]"
}

// noPodsToReclaim is upstream's error when the preemptable pods cannot
// free what is wanted.
func noPodsToReclaim(rs requirements) error {
	return fmt.Errorf("no set of running pods found to reclaim resources: %v", rs)
}

// preemptionPlan is what admitting a pod that failed the general filter
// takes: Reasons it still fails for (preemption cannot help), or Err when
// no set of pods frees enough, or else the Victims to stop first. Signal
// is the first insufficient resource, the preemptions metric's label.
type preemptionPlan struct {
	Reasons []AdmitResult
	Err     error
	Victims []*v1.Pod
	Signal  v1.ResourceName
}

// planPreemption is HandleAdmissionFailure: a pod that is not critical
// keeps its failures; a critical one keeps those that are not for
// resources (the others dropped: they are no reason to reject it); if
// resources are all it lacks, the admitted pods it may preempt are chosen
// to free them.
func planPreemption(pod *v1.Pod, failures []AdmitResult, admitted []*v1.Pod) preemptionPlan {
	if !podutil.IsCritical(pod) {
		return preemptionPlan{Reasons: failures}
	}
	var other []AdmitResult
	var reqs requirements
	for _, f := range failures {
		if f.shortage == nil {
			other = append(other, f)
			continue
		}
		reqs = append(reqs, requirement{f.shortage.Resource, f.shortage.insufficientAmount()})
	}
	if len(other) > 0 {
		return preemptionPlan{Reasons: other}
	}
	plan := preemptionPlan{}
	if len(reqs) > 0 {
		plan.Signal = reqs[0].resource
	}
	victims, err := podsToPreempt(pod, admitted, reqs)
	if err != nil {
		plan.Err = fmt.Errorf("preemption: error finding a set of pods to preempt: %v", err)
		return plan
	}
	plan.Victims = victims
	return plan
}

// podsToPreempt is getPodsToPreempt: the fewest, then the smallest, pods
// to stop, guaranteed ones only as far as all burstable and best-effort
// ones would not do, then burstable ones as far as the best-effort ones
// would not, then best-effort ones for the rest.
func podsToPreempt(preemptor *v1.Pod, pods []*v1.Pod, reqs requirements) ([]*v1.Pod, error) {
	bestEffort, burstable, guaranteed := preemptableByQOS(preemptor, pods)
	if left := reqs.subtract(concat(bestEffort, burstable, guaranteed)...); len(left) > 0 {
		return nil, noPodsToReclaim(left)
	}
	g, err := podsToPreemptByDistance(guaranteed, reqs.subtract(concat(bestEffort, burstable)...))
	if err != nil {
		return nil, err
	}
	bu, err := podsToPreemptByDistance(burstable, reqs.subtract(concat(bestEffort, g)...))
	if err != nil {
		return nil, err
	}
	be, err := podsToPreemptByDistance(bestEffort, reqs.subtract(concat(bu, g)...))
	if err != nil {
		return nil, err
	}
	return concat(be, bu, g), nil
}

// podsToPreemptByDistance picks, while something remains to free, the
// pod that leaves the least of it (on a tie the smaller one, the later
// of equals), so that few pods are stopped.
func podsToPreemptByDistance(candidates []*v1.Pod, reqs requirements) ([]*v1.Pod, error) {
	pods := append([]*v1.Pod(nil), candidates...)
	var out []*v1.Pod
	for len(reqs) > 0 {
		if len(pods) == 0 {
			return nil, noPodsToReclaim(reqs)
		}
		best, bestDist := 0, float64(len(reqs)+1)
		for i, p := range pods {
			d := reqs.distance(p)
			if d < bestDist || (d == bestDist && smallerRequest(p, pods[best])) {
				best, bestDist = i, d
			}
		}
		reqs = reqs.subtract(pods[best])
		out = append(out, pods[best])
		// Swap-remove, as upstream: the order decides between equals.
		pods[best] = pods[len(pods)-1]
		pods = pods[:len(pods)-1]
	}
	return out, nil
}

// smallerRequest orders by memory request, then CPU; equal counts as
// smaller, as upstream.
func smallerRequest(a, b *v1.Pod) bool {
	for _, r := range []v1.ResourceName{v1.ResourceMemory, v1.ResourceCPU} {
		if x, y := podRequest(a, r), podRequest(b, r); x != y {
			return x < y
		}
	}
	return true
}

// preemptableByQOS sorts the pods the preemptor may preempt by QoS class.
func preemptableByQOS(preemptor *v1.Pod, pods []*v1.Pod) (bestEffort, burstable, guaranteed []*v1.Pod) {
	for _, p := range pods {
		if !podutil.Preemptable(preemptor, p) {
			continue
		}
		switch podutil.QOSClass(p) {
		case v1.PodQOSBestEffort:
			bestEffort = append(bestEffort, p)
		case v1.PodQOSBurstable:
			burstable = append(burstable, p)
		case v1.PodQOSGuaranteed:
			guaranteed = append(guaranteed, p)
		}
	}
	return bestEffort, burstable, guaranteed
}

func concat(lists ...[]*v1.Pod) []*v1.Pod {
	var out []*v1.Pod
	for _, l := range lists {
		out = append(out, l...)
	}
	return out
}

// unexpectedAdmissionError is the predicate handler's answer when the
// recovery from a failure fails.
func unexpectedAdmissionError(err error) AdmitResult {
	return AdmitResult{Reason: reasonUnexpectedAdmission, Message: msgUnexpectedAdmissionPrefix + err.Error()}
}

// errKillTimeout is killPodNow's error when a pod is not stopped in time.
var errKillTimeout = errors.New("timeout waiting to kill pod")
