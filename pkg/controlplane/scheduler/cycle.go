package scheduler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodeagent/nodeagent/pkg/crash"
	"github.com/nodeagent/nodeagent/pkg/podutil"
)

// maxEventMessage is upstream's truncation of FailedScheduling messages.
const maxEventMessage = 1024

// processNext runs one scheduling cycle; false once the queue shuts down.
func (s *Scheduler) processNext(ctx context.Context) bool {
	k, shutdown := s.queue.Get()
	if shutdown {
		return false
	}
	defer s.queue.Done(k)
	s.mu.Lock()
	movesAtStart := s.moves
	s.mu.Unlock()

	ns, name := splitKey(k)
	pod, err := s.pods.Pods(ns).Get(name)
	if err != nil || !s.responsible(pod) || s.isAssumed(pod.UID) {
		s.queue.Forget(k) // gone, bound or being bound, or no longer ours
		return true
	}
	log := s.log.With("pod", k)
	start := time.Now()
	switch err := s.scheduleGuarded(ctx, log, pod, start); {
	case err == nil:
		s.queue.Forget(k) // the binding records the attempt
	case ctx.Err() != nil:
	case isUnschedulable(err):
		s.attempt(resultUnschedulable, start)
		log.Info("unable to schedule pod", "reason", err.Error())
		s.park(k, movesAtStart)
	default:
		s.attempt(resultError, start)
		log.Warn("scheduling pod failed; retrying", "err", err)
		s.queue.AddRateLimited(k)
	}
	return true
}

// panicComponent labels the scheduler's recovered panics.
const panicComponent = "scheduler"

var errSchedulePanicked = errors.New("scheduling panicked")

// scheduleGuarded is scheduleOne with a panic logged at error, counted and
// retried with backoff, instead of taking down the process (etcd, the API
// server and the agent share it).
func (s *Scheduler) scheduleGuarded(ctx context.Context, log *slog.Logger, pod *v1.Pod, start time.Time) (err error) {
	if crash.Do(log, panicComponent, pod.Namespace+"/"+pod.Name, func() { err = s.scheduleOne(ctx, pod, start) }) {
		return errSchedulePanicked
	}
	return err
}

// unschedulableError is a FitError: no node passes the filters.
type unschedulableError struct{ msg string }

func (e *unschedulableError) Error() string { return e.msg }

func isUnschedulable(err error) bool {
	_, ok := err.(*unschedulableError)
	return ok
}

// snapshot is the nodes with their bound and assumed pods.
func (s *Scheduler) snapshot() ([]*nodeInfo, error) {
	nodes, err := s.nodes.List(labels.Everything())
	if err != nil {
		return nil, err
	}
	all, err := s.pods.List(labels.Everything())
	if err != nil {
		return nil, err
	}
	seen := map[types.UID]bool{}
	var bound []*v1.Pod
	for _, p := range all {
		if p.Spec.NodeName != "" {
			bound = append(bound, p)
			seen[p.UID] = true
		}
	}
	now := time.Now()
	s.mu.Lock()
	for uid, a := range s.assumed {
		switch {
		case now.After(a.expires):
			delete(s.assumed, uid)
		case !seen[uid]:
			bound = append(bound, a.pod)
		}
	}
	s.mu.Unlock()
	return buildSnapshot(nodes, bound), nil
}

// selectHost filters and scores the nodes. It returns the chosen node, or
// "" and the FitError message. pick(n) breaks ties among n best nodes.
func selectHost(pod *v1.Pod, nodes []*nodeInfo, cs *cycleState, pick func(n int) int) (string, string) {
	if len(nodes) > 0 && cs != nil && cs.preFilterMsg != "" {
		// As upstream, the PreFilter's message stands for every node.
		return "", fmt.Sprintf("0/%d nodes are available: %s.", len(nodes), cs.preFilterMsg)
	}
	var feasible []*nodeInfo
	reasons := map[string]int{}
	for _, ni := range nodes {
		rs := runFilters(pod, ni, nodes, cs)
		if len(rs) == 0 {
			feasible = append(feasible, ni)
		}
		for _, r := range rs {
			reasons[r]++
		}
	}
	if len(feasible) == 0 {
		return "", fitErrorMessage(len(nodes), reasons)
	}
	if len(feasible) == 1 {
		return feasible[0].Node.Name, ""
	}
	scores := scoreNodes(pod, feasible, nodes)
	var best []int
	for i, sc := range scores {
		switch {
		case len(best) == 0 || sc > scores[best[0]]:
			best = append(best[:0], i)
		case sc == scores[best[0]]:
			best = append(best, i)
		}
	}
	return feasible[best[pick(len(best))]].Node.Name, ""
}

// scheduleOne places pod; it returns an *unschedulableError when no node
// fits, after recording that on the pod. The pod is assumed on its node at
// once, so that the next cycles count it, and bound in the background, as
// upstream's binding cycle: one slow bind does not hold the queue. start
// is when the attempt began, for its metrics.
func (s *Scheduler) scheduleOne(ctx context.Context, pod *v1.Pod, start time.Time) error {
	nodes, err := s.snapshot()
	if err != nil {
		return err
	}
	cs, err := s.preFilter(pod, nodes)
	if err != nil {
		return err
	}
	node, fitErr := selectHost(pod, nodes, cs, s.randSource.IntN)
	if node == "" {
		s.reportUnschedulable(ctx, pod, fitErr)
		return &unschedulableError{fitErr}
	}
	s.assume(pod, node)
	s.binds.Go(func() { s.bindGuarded(ctx, pod, node, start) })
	return nil
}

// bindGuarded is bind with a panic logged at error and counted; the
// assumption is forgotten and the pod queued again, as for a failure.
func (s *Scheduler) bindGuarded(ctx context.Context, pod *v1.Pod, node string, start time.Time) {
	if crash.Do(s.log.With("node", node), panicComponent, key(pod), func() { s.bind(ctx, pod, node, start) }) {
		s.forgetAssumed(pod.UID)
		s.attempt(resultError, start)
		s.queue.AddRateLimited(key(pod))
	}
}

// bind posts the binding and records the attempt begun at start; a
// failure (an error, as upstream's binding cycle counts it) forgets the
// assumption and queues the pod again with back-off.
func (s *Scheduler) bind(ctx context.Context, pod *v1.Pod, node string, start time.Time) {
	if err := s.bindVolumes(ctx, pod, node); err != nil {
		s.forgetAssumed(pod.UID)
		if ctx.Err() != nil {
			return
		}
		s.attempt(resultError, start)
		s.recorder.Eventf(pod, nil, v1.EventTypeWarning, "FailedScheduling", "Scheduling", "running PreBind plugin %q: %v", "VolumeBinding", err)
		s.log.Warn("binding the pod's volumes failed; retrying", "pod", key(pod), "node", node, "err", err)
		s.queue.AddRateLimited(key(pod))
		return
	}
	callCtx, cancel := context.WithTimeout(ctx, apiTimeout)
	defer cancel()
	err := s.client.CoreV1().Pods(pod.Namespace).Bind(callCtx, &v1.Binding{
		ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID},
		Target:     v1.ObjectReference{Kind: "Node", Name: node},
	}, metav1.CreateOptions{})
	switch {
	case apierrors.IsConflict(err), apierrors.IsNotFound(err):
		s.forgetAssumed(pod.UID)
		s.attempt(resultError, start)
		s.log.Info("pod bound or deleted meanwhile; dropped", "pod", key(pod), "err", err)
		return
	case err != nil:
		s.forgetAssumed(pod.UID)
		if ctx.Err() != nil {
			return
		}
		s.attempt(resultError, start)
		s.recorder.Eventf(pod, nil, v1.EventTypeWarning, "FailedScheduling", "Scheduling", "Binding rejected: %v", err)
		s.log.Warn("binding pod failed; retrying", "pod", key(pod), "node", node, "err", err)
		s.queue.AddRateLimited(key(pod))
		return
	}
	s.attempt(resultScheduled, start)
	s.log.Info("pod scheduled", "pod", key(pod), "node", node)
	s.recorder.Eventf(pod, nil, v1.EventTypeNormal, "Scheduled", "Binding", "Successfully assigned %v/%v to %v", pod.Namespace, pod.Name, node)
	if c := podScheduledCondition(pod); c != nil && c.Status != v1.ConditionTrue {
		// Upstream's binding sets PodScheduled=True; clear our False here
		// in case the API server's binding does not.
		s.patchPodScheduled(ctx, pod, v1.PodCondition{Type: v1.PodScheduled, Status: v1.ConditionTrue})
	}
}

// reportUnschedulable records the FailedScheduling event and sets
// PodScheduled=False (reason Unschedulable) with the same message.
func (s *Scheduler) reportUnschedulable(ctx context.Context, pod *v1.Pod, msg string) {
	ev := msg
	if len(ev) > maxEventMessage {
		ev = ev[:maxEventMessage-3] + "..."
	}
	s.recorder.Eventf(pod, nil, v1.EventTypeWarning, "FailedScheduling", "Scheduling", "%s", ev)
	want := v1.PodCondition{Type: v1.PodScheduled, Status: v1.ConditionFalse, Reason: v1.PodReasonUnschedulable, Message: msg}
	if c := podScheduledCondition(pod); c != nil && c.Status == want.Status && c.Reason == want.Reason && c.Message == want.Message {
		return
	}
	s.patchPodScheduled(ctx, pod, want)
}

// patchPodScheduled sets the condition with a strategic merge patch on
// pods/status (conditions merge by type), keeping the transition time
// when the status does not change.
func (s *Scheduler) patchPodScheduled(ctx context.Context, pod *v1.Pod, c v1.PodCondition) {
	now := metav1.Now()
	c.LastProbeTime = now
	c.LastTransitionTime = now
	if old := podScheduledCondition(pod); old != nil && old.Status == c.Status {
		c.LastTransitionTime = old.LastTransitionTime
	}
	patch, err := json.Marshal(map[string]any{
		"status": map[string]any{"conditions": []v1.PodCondition{c}},
	})
	if err != nil {
		return
	}
	callCtx, cancel := context.WithTimeout(ctx, apiTimeout)
	defer cancel()
	if _, err := s.client.CoreV1().Pods(pod.Namespace).Patch(callCtx, pod.Name, types.StrategicMergePatchType,
		patch, metav1.PatchOptions{}, "status"); err != nil && !apierrors.IsNotFound(err) {
		s.log.Warn("setting PodScheduled condition", "pod", key(pod), "err", err)
	}
}

func podScheduledCondition(pod *v1.Pod) *v1.PodCondition {
	return podutil.Condition(&pod.Status, v1.PodScheduled)
}

func splitKey(k string) (string, string) {
	ns, name, _ := strings.Cut(k, "/")
	return ns, name
}
