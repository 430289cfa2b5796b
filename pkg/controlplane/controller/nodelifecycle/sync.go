package nodelifecycle

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// Condition reasons and messages, as upstream's.
const (
	reasonUnknown      = "NodeStatusUnknown"
	messageUnknown     = "Kubelet stopped posting node status."
	reasonNeverUpdated = "NodeStatusNeverUpdated"
	messageNever       = "Kubelet never posted node status."
)

// conditionTaints are the NoSchedule taints for node conditions
// (upstream's nodeConditionToTaintKeyStatusMap).
var conditionTaints = map[v1.NodeConditionType]map[v1.ConditionStatus]string{
	v1.NodeReady:              {v1.ConditionFalse: v1.TaintNodeNotReady, v1.ConditionUnknown: v1.TaintNodeUnreachable},
	v1.NodeMemoryPressure:     {v1.ConditionTrue: v1.TaintNodeMemoryPressure},
	v1.NodeDiskPressure:       {v1.ConditionTrue: v1.TaintNodeDiskPressure},
	v1.NodePIDPressure:        {v1.ConditionTrue: v1.TaintNodePIDPressure},
	v1.NodeNetworkUnavailable: {v1.ConditionTrue: v1.TaintNodeNetworkUnavailable},
}

// managedTaints are the taint keys this controller adds and removes.
var managedTaints = []string{v1.TaintNodeNotReady, v1.TaintNodeUnreachable, v1.TaintNodeMemoryPressure,
	v1.TaintNodeDiskPressure, v1.TaintNodePIDPressure, v1.TaintNodeNetworkUnavailable, v1.TaintNodeUnschedulable}

func (c *Controller) sync(ctx context.Context, name string) error {
	node, err := c.nodeLister.Get(name)
	if apierrors.IsNotFound(err) {
		c.forget(name)
		return nil
	}
	if err != nil {
		return err
	}
	c.register(node)
	now := c.cfg.Now()
	if node, err = c.updateHealth(ctx, node, now); err != nil {
		return err
	}
	if node, err = c.updateTaints(ctx, node, now); err != nil {
		return err
	}
	return c.evictPods(ctx, node, now)
}

func readyCondition(n *v1.Node) *v1.NodeCondition {
	for i := range n.Status.Conditions {
		if n.Status.Conditions[i].Type == v1.NodeReady {
			return &n.Status.Conditions[i]
		}
	}
	return nil
}

func readyStatus(n *v1.Node) v1.ConditionStatus {
	if c := readyCondition(n); c != nil {
		return c.Status
	}
	return v1.ConditionUnknown
}

// updateHealth marks a silent node's conditions Unknown.
func (c *Controller) updateHealth(ctx context.Context, node *v1.Node, now time.Time) (*v1.Node, error) {
	ready := readyCondition(node)
	last, grace := node.CreationTimestamp.Time, c.cfg.StartupGracePeriod
	if ready != nil {
		last, grace = ready.LastHeartbeatTime.Time, c.cfg.GracePeriod
	}
	if l, err := c.leaseLister.Leases(LeaseNamespace).Get(node.Name); err == nil && l.Spec.RenewTime != nil && l.Spec.RenewTime.After(last) {
		last, grace = l.Spec.RenewTime.Time, c.cfg.GracePeriod
	}
	if now.Sub(last) <= grace {
		return node, nil
	}
	n := node.DeepCopy()
	changed := false
	for _, t := range []v1.NodeConditionType{v1.NodeReady, v1.NodeMemoryPressure, v1.NodeDiskPressure, v1.NodePIDPressure} {
		i := slices.IndexFunc(n.Status.Conditions, func(c v1.NodeCondition) bool { return c.Type == t })
		switch {
		case i < 0:
			n.Status.Conditions = append(n.Status.Conditions, v1.NodeCondition{Type: t, Status: v1.ConditionUnknown,
				Reason: reasonNeverUpdated, Message: messageNever,
				LastHeartbeatTime: node.CreationTimestamp, LastTransitionTime: metav1.NewTime(now)})
			changed = true
		case n.Status.Conditions[i].Status != v1.ConditionUnknown:
			cond := &n.Status.Conditions[i]
			cond.Status, cond.Reason, cond.Message, cond.LastTransitionTime = v1.ConditionUnknown, reasonUnknown, messageUnknown, metav1.NewTime(now)
			changed = true
		}
	}
	if !changed {
		return node, nil
	}
	c.log.Info("node stopped posting status", "node", node.Name, "lastHeartbeat", last)
	updated, err := c.client.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{})
	if err != nil {
		return nil, err
	}
	if readyStatus(node) == v1.ConditionTrue {
		// Reported once, on the transition, as upstream's.
		c.recordStatusChange(node, "NodeNotReady")
		if err := c.markPodsNotReady(ctx, node.Name, now); err != nil {
			return nil, err
		}
	}
	return updated, nil
}

// markPodsNotReady sets Ready=False on the pods of a node that went silent,
// so that endpoints drop them (upstream's MarkPodsNotReady).
func (c *Controller) markPodsNotReady(ctx context.Context, node string, now time.Time) error {
	objs, _ := c.podIndexer.ByIndex(podNodeIndex, node)
	var errs []error
	for _, o := range objs {
		pod := o.(*v1.Pod).DeepCopy()
		for i := range pod.Status.Conditions {
			if cond := &pod.Status.Conditions[i]; cond.Type == v1.PodReady && cond.Status == v1.ConditionTrue {
				cond.Status, cond.LastTransitionTime = v1.ConditionFalse, metav1.NewTime(now)
				_, err := c.client.CoreV1().Pods(pod.Namespace).UpdateStatus(ctx, pod, metav1.UpdateOptions{})
				if apierrors.IsNotFound(err) {
					continue // gone: nothing to report
				}
				if err != nil {
					errs = append(errs, fmt.Errorf("mark pod %s/%s not ready: %w", pod.Namespace, pod.Name, err))
				}
				c.recorder.Event(pod, v1.EventTypeWarning, "NodeNotReady", "Node is not ready")
			}
		}
	}
	return errors.Join(errs...)
}

// updateTaints makes the managed taints match the node's conditions.
func (c *Controller) updateTaints(ctx context.Context, node *v1.Node, now time.Time) (*v1.Node, error) {
	var want []v1.Taint
	for _, cond := range node.Status.Conditions {
		if key, ok := conditionTaints[cond.Type][cond.Status]; ok {
			want = append(want, v1.Taint{Key: key, Effect: v1.TaintEffectNoSchedule})
		}
	}
	if node.Spec.Unschedulable {
		want = append(want, v1.Taint{Key: v1.TaintNodeUnschedulable, Effect: v1.TaintEffectNoSchedule})
	}
	if key, ok := conditionTaints[v1.NodeReady][readyStatus(node)]; ok && !c.allNodesDown(node) {
		want = append(want, v1.Taint{Key: key, Effect: v1.TaintEffectNoExecute, TimeAdded: &metav1.Time{Time: now}})
	}
	var taints []v1.Taint
	changed := false
	for _, t := range node.Spec.Taints {
		i := slices.IndexFunc(want, func(w v1.Taint) bool { return w.Key == t.Key && w.Effect == t.Effect })
		switch {
		case i >= 0:
			want = slices.Delete(want, i, i+1)
		case slices.Contains(managedTaints, t.Key):
			changed = true
			continue
		}
		taints = append(taints, t)
	}
	if !changed && len(want) == 0 {
		return node, nil
	}
	n := node.DeepCopy()
	n.Spec.Taints = append(taints, want...)
	c.log.Info("updating node taints", "node", node.Name, "taints", n.Spec.Taints)
	return c.client.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
}

// allNodesDown: no node is Ready, so NoExecute taints are withheld.
func (c *Controller) allNodesDown(node *v1.Node) bool {
	nodes, _ := c.nodeLister.List(labels.Everything())
	for _, n := range nodes {
		if n.Name == node.Name {
			n = node
		}
		if readyStatus(n) == v1.ConditionTrue {
			return false
		}
	}
	return true
}

// evictPods deletes the node's pods that do not tolerate its NoExecute
// taints, now or once their tolerationSeconds have passed.
func (c *Controller) evictPods(ctx context.Context, node *v1.Node, now time.Time) error {
	var taints []v1.Taint
	start := now
	for _, t := range node.Spec.Taints {
		if t.Effect == v1.TaintEffectNoExecute {
			taints = append(taints, t)
			if t.TimeAdded != nil && t.TimeAdded.Time.Before(start) {
				start = t.TimeAdded.Time
			}
		}
	}
	if len(taints) == 0 {
		return nil
	}
	objs, _ := c.podIndexer.ByIndex(podNodeIndex, node.Name)
	var next time.Duration
	var errs []error
	for _, o := range objs {
		pod := o.(*v1.Pod)
		if pod.DeletionTimestamp != nil {
			continue
		}
		wait, evict := tolerationWait(pod.Spec.Tolerations, taints)
		if !evict {
			continue
		}
		if left := start.Add(wait).Sub(now); left > 0 {
			if next == 0 || left < next {
				next = left
			}
			continue
		}
		errs = append(errs, c.evict(ctx, pod))
	}
	if next > 0 {
		c.queue.AddAfter(node.Name, next)
	}
	return errors.Join(errs...)
}

// tolerationWait is how long a pod may stay: zero if a taint is not
// tolerated, else the smallest tolerationSeconds among the tolerations
// used; evict is false when they all tolerate forever.
func tolerationWait(tolerations []v1.Toleration, taints []v1.Taint) (time.Duration, bool) {
	wait, bounded := time.Duration(0), false
	for _, taint := range taints {
		matched := false
		for _, tol := range tolerations {
			if !tolerates(tol, taint) {
				continue
			}
			matched = true
			if tol.TolerationSeconds != nil {
				d := time.Duration(max(*tol.TolerationSeconds, 0)) * time.Second
				if !bounded || d < wait {
					wait, bounded = d, true
				}
			}
		}
		if !matched {
			return 0, true
		}
	}
	return wait, bounded
}

func tolerates(t v1.Toleration, taint v1.Taint) bool {
	if t.Effect != "" && t.Effect != taint.Effect {
		return false
	}
	if t.Key != "" && t.Key != taint.Key {
		return false
	}
	switch t.Operator {
	case v1.TolerationOpExists:
		return true
	case "", v1.TolerationOpEqual:
		return t.Value == taint.Value
	}
	return false
}

// evict marks the pod with the DisruptionTarget condition, then deletes it.
func (c *Controller) evict(ctx context.Context, pod *v1.Pod) error {
	c.log.Info("evicting pod from NoExecute-tainted node", "pod", pod.Namespace+"/"+pod.Name, "node", pod.Spec.NodeName)
	c.evictions.Eventf(pod, v1.EventTypeNormal, "TaintManagerEviction", "Marking for deletion Pod %s/%s", pod.Namespace, pod.Name)
	p := pod.DeepCopy()
	p.Status.Conditions = slices.DeleteFunc(p.Status.Conditions, func(c v1.PodCondition) bool { return c.Type == v1.DisruptionTarget })
	p.Status.Conditions = append(p.Status.Conditions, v1.PodCondition{Type: v1.DisruptionTarget, Status: v1.ConditionTrue,
		Reason: "DeletionByTaintManager", Message: "Taint manager: deleting due to NoExecute taint",
		LastTransitionTime: metav1.NewTime(c.cfg.Now())})
	if _, err := c.client.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		c.log.Debug("could not add the DisruptionTarget condition", "pod", p.Name, "err", err)
	}
	err := c.client.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
