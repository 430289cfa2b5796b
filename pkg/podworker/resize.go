package podworker

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	resourcehelper "k8s.io/component-helpers/resource"
	criv1 "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodeagent/nodeagent/pkg/podutil"
	"github.com/nodeagent/nodeagent/pkg/runtime"
)

// In-place pod resize (KEP-1287, InPlacePodVerticalScaling, GA since
// v1.35), as the kubelet's allocation manager and computePodResizeAction
// do it: the spec's container resources are the desired ones; the
// allocated ones are what the node admitted (and what containers are
// created with); the actuated ones are what a running container was given.

// Allocation maps a container's name to its resources.
type Allocation map[string]v1.ResourceRequirements

// ResizeDecision is the node's answer to a pod whose desired resources
// differ from the allocated ones.
type ResizeDecision struct {
	// Admit: the desired resources become the allocation.
	Admit bool
	// Reason (Infeasible or Deferred) and Message say why a resize waits;
	// both empty when there is nothing to resize.
	Reason, Message string
}

// resizableContainers are the containers whose resources may change in
// place: the regular ones and the sidecars, as upstream's
// IsResizableContainer.
func resizableContainers(pod *v1.Pod) []*v1.Container {
	var out []*v1.Container
	for i := range pod.Spec.InitContainers {
		if podutil.IsSidecar(&pod.Spec.InitContainers[i]) {
			out = append(out, &pod.Spec.InitContainers[i])
		}
	}
	for i := range pod.Spec.Containers {
		out = append(out, &pod.Spec.Containers[i])
	}
	return out
}

// AllocationOf is the pod's spec resources, the allocation of a pod the
// node admits.
func AllocationOf(pod *v1.Pod) Allocation {
	a := Allocation{}
	for _, c := range resizableContainers(pod) {
		a[c.Name] = *c.Resources.DeepCopy()
	}
	return a
}

// WithAllocation is the pod with its containers' resources replaced by the
// allocation (upstream's UpdatePodFromAllocation): what the node runs.
func WithAllocation(pod *v1.Pod, alloc Allocation) *v1.Pod {
	if apiequality.Semantic.DeepEqual(AllocationOf(pod), alloc) {
		return pod
	}
	out := pod.DeepCopy()
	for _, c := range resizableContainers(out) {
		if r, ok := alloc[c.Name]; ok {
			c.Resources = *r.DeepCopy()
		}
	}
	return out
}

// DecideResize is the allocation manager's handlePodResourcesResize: a pod
// whose desired resources ask for more cpu or memory than the node can
// ever give is Infeasible; one that does not fit beside the other admitted
// pods is Deferred, with the admission's message; else it is admitted.
func DecideResize(pod *v1.Pod, alloc Allocation, others []*v1.Pod, allocatable v1.ResourceList) ResizeDecision {
	if apiequality.Semantic.DeepEqual(AllocationOf(pod), alloc) {
		return ResizeDecision{}
	}
	reqs := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
	cpu, mem := reqs.Cpu().MilliValue(), reqs.Memory().Value()
	cpuCap, hasCPU := allocatable[v1.ResourceCPU]
	memCap, hasMem := allocatable[v1.ResourceMemory]
	switch {
	case hasMem && mem > memCap.Value():
		return ResizeDecision{Reason: v1.PodReasonInfeasible, Message: fmt.Sprintf("Node didn't have enough capacity: memory, requested: %d, capacity: %d", mem, memCap.Value())}
	case hasCPU && cpu > cpuCap.MilliValue():
		return ResizeDecision{Reason: v1.PodReasonInfeasible, Message: fmt.Sprintf("Node didn't have enough capacity: cpu, requested: %d, capacity: %d", cpu, cpuCap.MilliValue())}
	}
	var rest []*v1.Pod
	for _, p := range others {
		if p.UID != pod.UID {
			rest = append(rest, p)
		}
	}
	// The pods count is no question for a pod already running here.
	fit := allocatable.DeepCopy()
	delete(fit, v1.ResourcePods)
	if failures := checkResources(pod, rest, fit); len(failures) > 0 {
		return ResizeDecision{Reason: v1.PodReasonDeferred, Message: failures[0].Message}
	}
	return ResizeDecision{Admit: true}
}

// ResizePlan is what a sync does to bring running containers to their
// allocation.
type ResizePlan struct {
	// Update lists the containers resized in place (UpdateContainerResources).
	Update []ContainerResize
	// Restart maps the ID of a container that must restart for its resize
	// (a changed resource's resizePolicy is RestartContainer) to why.
	Restart map[string]KillReason
	// RestartIndex and RestartSidecars are the spec.containers and
	// spec.initContainers indexes of those restarts.
	RestartIndex, RestartSidecars []int
}

// ContainerResize is one in-place update.
type ContainerResize struct {
	Name, ID  string
	Resources v1.ResourceRequirements
}

// Empty reports whether no container needs resizing.
func (p ResizePlan) Empty() bool { return len(p.Update) == 0 && len(p.Restart) == 0 }

func (p ResizePlan) String() string {
	var parts []string
	for _, u := range p.Update {
		parts = append(parts, "update="+u.Name)
	}
	for id, k := range p.Restart {
		parts = append(parts, fmt.Sprintf("restart=%s(%.12s)", k.Name, id))
	}
	sort.Strings(parts)
	if len(parts) == 0 {
		return "nothing to resize"
	}
	return strings.Join(parts, " ")
}

// ComputeResizeActions is the kubelet's computePodResizeAction: each
// running resizable container whose actuated cpu or memory differs from
// its allocation is updated in place, or restarted when the resizePolicy
// of a changed resource is RestartContainer. pod carries the allocation
// (WithAllocation). It is pure.
func ComputeResizeActions(pod *v1.Pod, st *runtime.PodStatus, actuated Allocation) ResizePlan {
	p := ResizePlan{Restart: map[string]KillReason{}}
	index, sidecars := map[string]int{}, map[string]int{}
	for i := range pod.Spec.Containers {
		index[pod.Spec.Containers[i].Name] = i
	}
	for i := range pod.Spec.InitContainers {
		sidecars[pod.Spec.InitContainers[i].Name] = i
	}
	for _, c := range resizableContainers(pod) {
		cs := st.Latest(c.Name)
		cur, known := actuated[c.Name]
		if cs == nil || cs.State != criv1.ContainerState_CONTAINER_RUNNING || !known {
			continue
		}
		changed := changedResources(cur, c.Resources)
		if len(changed) == 0 {
			continue
		}
		restart := false
		for _, name := range changed {
			restart = restart || resizeRestartPolicy(c, name) == v1.RestartContainer
		}
		if restart {
			p.Restart[cs.ID] = KillReason{Name: c.Name, Message: fmt.Sprintf("Container %s resize requires restart", c.Name)}
			if i, regular := index[c.Name]; regular {
				p.RestartIndex = append(p.RestartIndex, i)
			} else {
				p.RestartSidecars = append(p.RestartSidecars, sidecars[c.Name])
			}
			continue
		}
		p.Update = append(p.Update, ContainerResize{Name: c.Name, ID: cs.ID, Resources: *c.Resources.DeepCopy()})
	}
	sort.Ints(p.RestartIndex)
	sort.Ints(p.RestartSidecars)
	return p
}

// changedResources lists cpu and memory when their request or limit
// differs between a and b.
func changedResources(a, b v1.ResourceRequirements) []v1.ResourceName {
	var out []v1.ResourceName
	for _, name := range []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory} {
		ra, rb := a.Requests[name], b.Requests[name]
		la, lb := a.Limits[name], b.Limits[name]
		if ra.Cmp(rb) != 0 || la.Cmp(lb) != 0 {
			out = append(out, name)
		}
	}
	return out
}

// memoryLimitDecrease gives the new memory limit when a resize lowers it
// (or sets one where there was none).
func memoryLimitDecrease(cur, next v1.ResourceRequirements) (int64, bool) {
	lim, has := next.Limits[v1.ResourceMemory]
	old, had := cur.Limits[v1.ResourceMemory]
	if !has || (had && lim.Cmp(old) >= 0) {
		return 0, false
	}
	return lim.Value(), true
}

// resizeRestartPolicy is the container's policy for a resource,
// NotRequired when it names none (the API's default).
func resizeRestartPolicy(c *v1.Container, name v1.ResourceName) v1.ResourceResizeRestartPolicy {
	for _, rp := range c.ResizePolicy {
		if rp.ResourceName == name && rp.RestartPolicy != "" {
			return rp.RestartPolicy
		}
	}
	return v1.NotRequired
}

// upperBound is the pod with each container's cpu and memory limits the
// larger of the actuated and allocated ones: the pod cgroup a resize
// passes through, so that no container's limit exceeds its pod's while
// the containers change (the kubelet orders pod and container updates per
// resource for the same reason).
func upperBound(pod *v1.Pod, actuated Allocation) *v1.Pod {
	out := pod.DeepCopy()
	for _, c := range resizableContainers(out) {
		cur, ok := actuated[c.Name]
		if !ok {
			continue
		}
		for _, name := range []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory} {
			old, hadOld := cur.Limits[name]
			now, hasNow := c.Resources.Limits[name]
			switch {
			case hadOld && !hasNow, !hadOld && !hasNow:
				// no limit now: unlimited is already the upper bound
			case !hadOld && hasNow:
				delete(c.Resources.Limits, name) // unlimited before
			case old.Cmp(now) > 0:
				c.Resources.Limits[name] = old
			}
		}
	}
	return out
}

// resizeConditions are the PodResizePending and PodResizeInProgress
// conditions the status reports: pending while a resize waits for the
// node (Infeasible, Deferred), in progress while an allocation is not yet
// actuated (with reason Error and the error when an update failed). Each
// observes the generation of the pod it was decided for.
func resizeConditions(pending ResizeDecision, pendingGen int64, inProgress bool, progressGen int64, progressErr string, old []v1.PodCondition, now metav1.Time) []v1.PodCondition {
	var out []v1.PodCondition
	if pending.Reason != "" {
		out = append(out, keepTransition(v1.PodCondition{Type: v1.PodResizePending, Status: v1.ConditionTrue, Reason: pending.Reason, Message: pending.Message, ObservedGeneration: pendingGen}, old, now))
	}
	if inProgress {
		c := v1.PodCondition{Type: v1.PodResizeInProgress, Status: v1.ConditionTrue, ObservedGeneration: progressGen}
		if progressErr != "" {
			c.Reason, c.Message = v1.PodReasonError, progressErr
		}
		out = append(out, keepTransition(c, old, now))
	}
	return out
}

// keepTransition keeps the times of an unchanged condition.
func keepTransition(c v1.PodCondition, old []v1.PodCondition, now metav1.Time) v1.PodCondition {
	c.LastProbeTime, c.LastTransitionTime = now, now
	for _, o := range old {
		if o.Type == c.Type && o.Status == c.Status && o.Reason == c.Reason && o.Message == c.Message {
			c.LastProbeTime, c.LastTransitionTime = o.LastProbeTime, o.LastTransitionTime
		}
	}
	return c
}

// inProgress: some running container's actuated resources are not its
// allocation yet.
func inProgress(pod *v1.Pod, st *runtime.PodStatus, alloc, actuated Allocation) bool {
	for _, c := range resizableContainers(pod) {
		cs := st.Latest(c.Name)
		cur, ok := actuated[c.Name]
		if cs != nil && cs.State == criv1.ContainerState_CONTAINER_RUNNING && ok && len(changedResources(cur, alloc[c.Name])) > 0 {
			return true
		}
	}
	return false
}

// resizeEventMessage is the kubelet's resize event message: the prefix,
// then the pod's container resources, its generation and any error as
// JSON (events.podResizeMessage).
func resizeEventMessage(pod *v1.Pod, prefix, errMsg string) string {
	type containerAllocation struct {
		Name      string                  `json:"name"`
		Resources v1.ResourceRequirements `json:"resources,omitempty"`
	}
	summary := struct {
		InitContainers []containerAllocation `json:"initContainers,omitempty"`
		Containers     []containerAllocation `json:"containers,omitempty"`
		Generation     int64                 `json:"generation"`
		Error          string                `json:"error,omitempty"`
	}{Generation: pod.Generation, Error: errMsg}
	for _, c := range pod.Spec.InitContainers {
		summary.InitContainers = append(summary.InitContainers, containerAllocation{c.Name, c.Resources})
	}
	for _, c := range pod.Spec.Containers {
		summary.Containers = append(summary.Containers, containerAllocation{c.Name, c.Resources})
	}
	b, err := json.Marshal(summary)
	if err != nil {
		return prefix
	}
	return prefix + ": " + string(b)
}

// setResizeStatus reports the allocation on every container status of a
// resizable container and the actuated resources on the running ones
// (upstream's allocatedResources and resources).
func setResizeStatus(s *v1.PodStatus, alloc, actuated Allocation) {
	set := func(list []v1.ContainerStatus) {
		for i := range list {
			cs := &list[i]
			a, ok := alloc[cs.Name]
			if !ok {
				continue
			}
			if len(a.Requests) > 0 {
				cs.AllocatedResources = a.Requests.DeepCopy()
			}
			if r, ok := actuated[cs.Name]; ok && cs.State.Running != nil {
				cs.Resources = r.DeepCopy()
			}
		}
	}
	set(s.InitContainerStatuses)
	set(s.ContainerStatuses)
}
