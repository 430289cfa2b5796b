package podworker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"

	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	criv1 "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodeagent/nodeagent/pkg/podutil"
	"github.com/nodeagent/nodeagent/pkg/podworker/criconfig"
	"github.com/nodeagent/nodeagent/pkg/runtime"
)

// resizeState is what a worker keeps of its pod's resources; the
// allocation and the actuated resources are checkpointed in the pod's
// directory, as the kubelet checkpoints allocated_pods_state and
// actuated_pods_state, so that an agent restart neither forgets a resize
// held back nor takes a resize not yet applied for done.
type resizeState struct {
	alloc    Allocation        // nil before the first sync
	actuated Allocation        // by container name, for the running containers
	seen     map[string]string // container name -> the ID its actuated resources are of
	pending  ResizeDecision
	progress string // the last in-place update's error
	// pendingGen and progressGen are the pod generations the pending
	// decision and the admitted resize were made for.
	pendingGen, progressGen int64
	resizing                bool // a resize was in progress at the last status
	saved                   *resizeCheckpoint
}

// resizeCheckpoint is the file's content.
type resizeCheckpoint struct {
	Allocated    Allocation        `json:"allocated"`
	Actuated     Allocation        `json:"actuated"`
	ContainerIDs map[string]string `json:"containerIDs"`
}

const resizeCheckpointFile = "resources_state.json"

// loadResizeState reads the checkpoint a previous agent left, if any.
func (w *worker) loadResizeState() bool {
	if w.d.rootDir == "" {
		return false
	}
	b, err := os.ReadFile(filepath.Join(w.podDir(), resizeCheckpointFile))
	if err != nil {
		return false
	}
	var c resizeCheckpoint
	if err := json.Unmarshal(b, &c); err != nil || c.Allocated == nil {
		w.log.Warn("resize checkpoint unreadable; using the spec's resources", "err", err)
		return false
	}
	r := &w.resize
	r.alloc, r.actuated, r.seen, r.saved = c.Allocated, c.Actuated, c.ContainerIDs, &c
	if r.actuated == nil {
		r.actuated = Allocation{}
	}
	if r.seen == nil {
		r.seen = map[string]string{}
	}
	return true
}

// saveResizeState writes the checkpoint when it changed.
func (w *worker) saveResizeState() {
	r := &w.resize
	if w.d.rootDir == "" {
		return
	}
	c := &resizeCheckpoint{Allocated: r.alloc, Actuated: r.actuated, ContainerIDs: r.seen}
	if r.saved != nil && apiequality.Semantic.DeepEqual(r.saved, c) {
		return
	}
	b, err := json.Marshal(c)
	if err == nil {
		err = writeFileAtomic(filepath.Join(w.podDir(), resizeCheckpointFile), b)
	}
	if err != nil {
		w.log.Warn("write resize checkpoint", "err", err)
		return
	}
	saved := *c
	saved.Allocated, saved.Actuated = cloneAllocation(c.Allocated), cloneAllocation(c.Actuated)
	saved.ContainerIDs = maps.Clone(c.ContainerIDs)
	r.saved = &saved
}

func cloneAllocation(a Allocation) Allocation {
	out := make(Allocation, len(a))
	for k, v := range a {
		out[k] = *v.DeepCopy()
	}
	return out
}

func writeFileAtomic(path string, b []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// resourceUpdater is the runtime's UpdateContainerResources.
type resourceUpdater interface {
	UpdateContainerResources(ctx context.Context, id string, resources *criv1.ContainerResources) error
}

// statsLister reads container usage (the memory limit decrease check).
type statsLister interface {
	ListContainerStats(ctx context.Context, filter *criv1.ContainerStatsFilter) ([]*criv1.ContainerStats, error)
}

// observeContainers records, for each running container not seen yet,
// that it runs with the allocation it was created with.
func (r *resizeState) observeContainers(pod *v1.Pod, st *runtime.PodStatus) {
	for _, c := range resizableContainers(pod) {
		cs := st.Latest(c.Name)
		if cs == nil || cs.State != criv1.ContainerState_CONTAINER_RUNNING || r.seen[c.Name] == cs.ID {
			continue
		}
		r.seen[c.Name] = cs.ID
		a := r.alloc[c.Name]
		r.actuated[c.Name] = *a.DeepCopy()
	}
}

// syncResize admits or holds back a resize of pod and returns the pod as
// the node runs it (its allocation) with what its running containers need.
func (w *worker) syncResize(pod *v1.Pod, st *runtime.PodStatus) (*v1.Pod, ResizePlan) {
	r := &w.resize
	if r.alloc == nil && !w.loadResizeState() {
		r.alloc, r.actuated, r.seen = AllocationOf(pod), Allocation{}, map[string]string{}
	}
	r.observeContainers(WithAllocation(pod, r.alloc), st)
	var others []*v1.Pod
	if w.d.otherPods != nil {
		others = w.d.otherPods()
	}
	d := DecideResize(pod, r.alloc, others, w.d.node.Allocatable)
	switch {
	case d.Admit:
		r.alloc, r.pending, r.progress, r.resizing, r.progressGen = AllocationOf(pod), ResizeDecision{}, "", true, pod.Generation
		w.d.events.Eventf(pod, v1.EventTypeNormal, "ResizeStarted", "%s", resizeEventMessage(pod, "Pod resize started", ""))
	case d.Reason != "" && d != r.pending:
		reason := "ResizeDeferred"
		if d.Reason == v1.PodReasonInfeasible {
			reason = "ResizeInfeasible"
		}
		w.d.events.Eventf(pod, v1.EventTypeWarning, reason, "%s", resizeEventMessage(pod, "Pod resize "+d.Reason, d.Message))
		r.pending, r.pendingGen = d, pod.Generation
	case d.Reason != "":
		r.pendingGen = pod.Generation
	case d.Reason == "":
		r.pending = ResizeDecision{}
	}
	allocated := WithAllocation(pod, r.alloc)
	w.mu.Lock()
	w.allocatedPod = allocated
	w.mu.Unlock()
	return allocated, ComputeResizeActions(allocated, st, r.actuated)
}

// resizeInPlace runs the plan's in-place updates: the pod cgroup widened
// to hold both the old and the new limits, each container's update, then
// the pod cgroup at its allocation (left to the executor when containers
// restart, as it sets the pod cgroup after stopping them).
func (w *worker) resizeInPlace(ctx context.Context, pod *v1.Pod, plan ResizePlan) error {
	r := &w.resize
	if len(plan.Update) == 0 {
		return nil
	}
	updater, ok := w.d.runtime.(resourceUpdater)
	if !ok {
		return errors.New("the runtime client cannot update container resources")
	}
	parent := w.podCgroupParent(pod)
	if err := w.ensurePodCgroup(upperBound(pod, r.actuated), parent); err != nil {
		r.progress = err.Error()
		return err
	}
	var errs []error
	for _, u := range plan.Update {
		c := podutil.FindContainer(pod, u.Name)
		if c == nil {
			continue
		}
		if err := w.checkMemoryDecrease(ctx, u, r.actuated[u.Name]); err != nil {
			errs = append(errs, err)
			continue
		}
		res := &criv1.ContainerResources{Linux: criconfig.ContainerResources(pod, c, w.d.node)}
		if err := updater.UpdateContainerResources(ctx, u.ID, res); err != nil {
			errs = append(errs, fmt.Errorf("container %s: %w", u.Name, err))
			continue
		}
		r.actuated[u.Name] = *u.Resources.DeepCopy()
	}
	if err := errors.Join(errs...); err != nil {
		r.progress = err.Error()
		w.d.events.Eventf(pod, v1.EventTypeWarning, "ResizeError", "%s", resizeEventMessage(pod, "Pod resize error", r.progress))
		return err
	}
	r.progress = ""
	if len(plan.Restart) > 0 {
		return nil
	}
	return w.ensurePodCgroup(pod, parent)
}

// checkMemoryDecrease is the kubelet's best-effort guard against an
// OOM kill by a resize (validateMemoryResizeAction): a memory limit is
// not lowered to or below the container's current usage, and the resize
// stays in progress with the error.
func (w *worker) checkMemoryDecrease(ctx context.Context, u ContainerResize, cur v1.ResourceRequirements) error {
	limit, lower := memoryLimitDecrease(cur, u.Resources)
	if !lower {
		return nil
	}
	var usage *criv1.UInt64Value
	if lister, ok := w.d.runtime.(statsLister); ok {
		stats, err := lister.ListContainerStats(ctx, &criv1.ContainerStatsFilter{Id: u.ID})
		if err != nil {
			return fmt.Errorf("container %q memory usage: %w", u.Name, err)
		}
		for _, s := range stats {
			if s.GetAttributes().GetId() == u.ID && s.GetMemory() != nil {
				// containerd 1.6 reports the working set, not always the usage.
				if usage = s.GetMemory().GetUsageBytes(); usage == nil {
					usage = s.GetMemory().GetWorkingSetBytes()
				}
			}
		}
	}
	if usage == nil {
		return fmt.Errorf("missing container %q memory usage", u.Name)
	}
	if usage.GetValue() >= uint64(limit) {
		return fmt.Errorf("attempting to set container %q memory limit (%d) below current usage (%d)", u.Name, limit, usage.GetValue())
	}
	return nil
}

// admittedPods are the pods a resize must fit beside, each with the
// resources its node admitted (upstream's getAllocatedPods).
func (m *Manager) admittedPods() []*v1.Pod {
	m.mu.Lock()
	defer m.mu.Unlock()
	pods := m.admittedPodsLocked()
	for i, p := range pods {
		if w := m.workers[p.UID]; w != nil {
			w.mu.Lock()
			if w.allocatedPod != nil {
				pods[i] = w.allocatedPod
			}
			w.mu.Unlock()
		}
	}
	return pods
}

// podCgroupParent is the pod's cgroup as the sandbox config names it.
func (w *worker) podCgroupParent(pod *v1.Pod) string {
	if w.d.node.CgroupRoot == "" || w.d.node.FlatCgroups {
		return ""
	}
	return criconfig.PodCgroupParent(w.d.node.CgroupRoot, criconfig.QOSClass(pod), pod.UID)
}

// withResizeRestarts adds the containers a resize restarts to the plan:
// stopped in this sync, as for a changed definition, and started again
// unless their restart back-off holds (upstream starts them through the
// same doBackOff as every other start).
func withResizeRestarts(pod *v1.Pod, st *runtime.PodStatus, bo BackoffChecker, plan Plan, rp ResizePlan) Plan {
	for id, k := range rp.Restart {
		if _, dup := plan.ContainersToKill[id]; !dup {
			plan.ContainersToKill[id] = k
		}
	}
	plan.ContainersToStart = addIndexes(plan.ContainersToStart, plan.allowed(pod, st, bo, pod.Spec.Containers, rp.RestartIndex, ""))
	plan.SidecarsToStart = addIndexes(plan.SidecarsToStart, plan.allowed(pod, st, bo, pod.Spec.InitContainers, rp.RestartSidecars, plan.SandboxID))
	return plan
}

// allowed are the indexes into list whose start the back-off lets through.
func (p *Plan) allowed(pod *v1.Pod, st *runtime.PodStatus, bo BackoffChecker, list []v1.Container, idx []int, sandboxID string) []int {
	var out []int
	for _, i := range idx {
		if p.backOff(pod, &list[i], lastExited(st, list[i].Name, sandboxID), bo) {
			out = append(out, i)
		}
	}
	return out
}

func addIndexes(list, more []int) []int {
	for _, i := range more {
		if !slices.Contains(list, i) {
			list = append(list, i)
		}
	}
	return list
}

// applyResizeStatus reports allocation and actuated resources and the
// resize conditions (the worker's lock is held).
func (w *worker) applyResizeStatus(pod *v1.Pod, st *runtime.PodStatus, s *v1.PodStatus, old *v1.PodStatus) {
	r := &w.resize
	if r.alloc == nil {
		return
	}
	allocated := WithAllocation(pod, r.alloc)
	r.observeContainers(allocated, st)
	setResizeStatus(s, r.alloc, r.actuated)
	resizing := inProgress(allocated, st, r.alloc, r.actuated)
	if r.resizing && !resizing {
		w.d.events.Eventf(pod, v1.EventTypeNormal, "ResizeCompleted", "%s", resizeEventMessage(allocated, "Pod resize completed", ""))
	}
	r.resizing = resizing
	w.saveResizeState()
	var prev []v1.PodCondition
	if old != nil {
		prev = old.Conditions
	}
	s.Conditions = append(s.Conditions, resizeConditions(r.pending, r.pendingGen, resizing, r.progressGen, r.progress, prev, metav1.NewTime(w.d.now()))...)
}
