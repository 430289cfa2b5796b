package replicaset

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/nodeagent/nodeagent/pkg/controlplane/controller/internal/ctrlutil"
	"github.com/nodeagent/nodeagent/pkg/podutil"
)

// podDeletionCost is the annotation that orders scale-down (lower first).
const podDeletionCost = "controller.kubernetes.io/pod-deletion-cost"

// manageReplicas creates or deletes pods to reach spec.replicas.
func (c *Controller) manageReplicas(ctx context.Context, pods []*v1.Pod, rs *appsv1.ReplicaSet) error {
	key := ctrlutil.Key(rs)
	diff := len(pods) - int(*rs.Spec.Replicas)
	switch {
	case diff < 0:
		n := min(-diff, BurstReplicas)
		c.exp.expectCreations(key, n)
		ok, err := slowStartBatch(n, 1, func() error { return c.createPod(ctx, rs) })
		for range n - ok { // the skipped and failed creations will never be observed
			c.exp.creationObserved(key)
		}
		return err
	case diff > 0:
		n := min(diff, BurstReplicas)
		victims := c.podsToDelete(rs, pods, n)
		keys := make([]string, len(victims))
		for i, p := range victims {
			keys[i] = ctrlutil.Key(p)
		}
		c.exp.expectDeletions(key, keys)
		errs := make([]error, len(victims))
		var wg sync.WaitGroup
		for i, p := range victims {
			wg.Go(func() {
				if err := c.removePod(ctx, rs, p); err != nil {
					c.exp.deletionObserved(key, keys[i])
					if !apierrors.IsNotFound(err) {
						errs[i] = err
					}
				}
			})
		}
		wg.Wait()
		return errors.Join(errs...)
	}
	return nil
}

func (c *Controller) createPod(ctx context.Context, rs *appsv1.ReplicaSet) error {
	prefix := rs.Name + "-"
	if len(validation.IsDNS1123Subdomain(prefix+"x")) != 0 {
		prefix = rs.Name
	}
	t := rs.Spec.Template.DeepCopy()
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName:    prefix,
			Namespace:       rs.Namespace,
			Labels:          t.Labels,
			Annotations:     t.Annotations,
			Finalizers:      t.Finalizers,
			OwnerReferences: []metav1.OwnerReference{*ctrlutil.NewControllerRef(rs, controllerKind)},
		},
		Spec: t.Spec,
	}
	created, err := c.client.CoreV1().Pods(rs.Namespace).Create(ctx, pod, metav1.CreateOptions{})
	switch {
	case err != nil && apierrors.HasStatusCause(err, v1.NamespaceTerminatingCause):
		return nil // the namespace is going away: nothing to do, nothing to report
	case err != nil:
		c.recorder.Eventf(rs, v1.EventTypeWarning, "FailedCreate", "Error creating: %v", err)
		return err // unwrapped: it is the ReplicaFailure condition's message, as upstream's
	}
	c.recorder.Eventf(rs, v1.EventTypeNormal, "SuccessfulCreate", "Created pod: %v", created.Name)
	return nil
}

// removePod deletes one pod and reports it on the ReplicaSet as upstream's
// RealPodControl: a pod already gone is neither an error event nor a
// success.
func (c *Controller) removePod(ctx context.Context, rs *appsv1.ReplicaSet, p *v1.Pod) error {
	err := c.client.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return err
	case err != nil:
		c.recorder.Eventf(rs, v1.EventTypeWarning, "FailedDelete", "Error deleting: %v", err)
		return fmt.Errorf("delete pod %s: %w", p.Name, err)
	}
	c.recorder.Eventf(rs, v1.EventTypeNormal, "SuccessfulDelete", "Deleted pod: %v", p.Name)
	return nil
}

// slowStartBatch calls fn count times in batches of 1, 2, 4, ... and stops
// after the first batch with a failure, so a failing create (quota,
// admission) costs one call rather than count. It returns the successes.
func slowStartBatch(count, initial int, fn func() error) (int, error) {
	remaining, successes := count, 0
	for batch := min(remaining, initial); batch > 0; batch = min(2*batch, remaining) {
		errc := make(chan error, batch)
		var wg sync.WaitGroup
		for range batch {
			wg.Go(func() {
				if err := fn(); err != nil {
					errc <- err
				}
			})
		}
		wg.Wait()
		successes += batch - len(errc)
		if len(errc) > 0 {
			return successes, <-errc
		}
		remaining -= batch
	}
	return successes, nil
}

// podsToDelete picks n pods as upstream's ActivePodsWithRanks: ranked by
// how many related pods (of ReplicaSets with the same controller) share
// their node.
func (c *Controller) podsToDelete(rs *appsv1.ReplicaSet, pods []*v1.Pod, n int) []*v1.Pod {
	if n >= len(pods) {
		return pods
	}
	related := c.relatedPods(rs, pods)
	onNode := map[string]int{}
	for _, p := range related {
		onNode[p.Spec.NodeName]++
	}
	ranked := rankedPods{pods: append([]*v1.Pod(nil), pods...), rank: make([]int, len(pods)), now: metav1.NewTime(c.now())}
	for i, p := range ranked.pods {
		ranked.rank[i] = onNode[p.Spec.NodeName]
	}
	sort.Sort(ranked)
	return ranked.pods[:n]
}

// relatedPods are the active pods of every ReplicaSet sharing rs's
// controller (the ReplicaSets of one Deployment), or rs's own.
func (c *Controller) relatedPods(rs *appsv1.ReplicaSet, own []*v1.Pod) []*v1.Pod {
	ref := metav1.GetControllerOf(rs)
	if ref == nil {
		return own
	}
	owners := map[string]bool{}
	list, _ := c.rsLister.ReplicaSets(rs.Namespace).List(labels.Everything())
	for _, r := range list {
		if o := metav1.GetControllerOf(r); o != nil && o.UID == ref.UID {
			owners[string(r.UID)] = true
		}
	}
	all, _ := c.podLister.Pods(rs.Namespace).List(labels.Everything())
	var out []*v1.Pod
	for _, p := range activePods(all) {
		if o := metav1.GetControllerOf(p); o != nil && owners[string(o.UID)] {
			out = append(out, p)
		}
	}
	return out
}

type rankedPods struct {
	pods []*v1.Pod
	rank []int
	now  metav1.Time
}

func (s rankedPods) Len() int { return len(s.pods) }
func (s rankedPods) Swap(i, j int) {
	s.pods[i], s.pods[j] = s.pods[j], s.pods[i]
	s.rank[i], s.rank[j] = s.rank[j], s.rank[i]
}

var phaseOrder = map[v1.PodPhase]int{v1.PodPending: 0, v1.PodUnknown: 1, v1.PodRunning: 2}

// Less is upstream's order: unassigned < assigned; Pending < Unknown <
// Running; not ready < ready; lower deletion cost; more related pods on
// the node; ready for less time (log scale); more restarts; newer.
func (s rankedPods) Less(i, j int) bool {
	a, b := s.pods[i], s.pods[j]
	if a.Spec.NodeName != b.Spec.NodeName && (a.Spec.NodeName == "" || b.Spec.NodeName == "") {
		return a.Spec.NodeName == ""
	}
	if phaseOrder[a.Status.Phase] != phaseOrder[b.Status.Phase] {
		return phaseOrder[a.Status.Phase] < phaseOrder[b.Status.Phase]
	}
	if isReady(a) != isReady(b) {
		return !isReady(a)
	}
	if ca, cb := deletionCost(a), deletionCost(b); ca != cb {
		return ca < cb
	}
	if s.rank[i] != s.rank[j] {
		return s.rank[i] > s.rank[j]
	}
	if isReady(a) && isReady(b) {
		ra, rb := readyTime(a), readyTime(b)
		if !ra.Equal(rb) {
			if ra.IsZero() || rb.IsZero() {
				return afterOrZero(ra, rb)
			}
			if d := logRankDiff(*ra, *rb, s.now); d != 0 {
				return d < 0
			}
			return a.UID < b.UID
		}
	}
	if ra, rb := maxRestarts(a), maxRestarts(b); ra != rb {
		return ra > rb
	}
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		if a.CreationTimestamp.IsZero() || b.CreationTimestamp.IsZero() {
			return afterOrZero(&a.CreationTimestamp, &b.CreationTimestamp)
		}
		if d := logRankDiff(a.CreationTimestamp, b.CreationTimestamp, s.now); d != 0 {
			return d < 0
		}
		return a.UID < b.UID
	}
	return false
}

func afterOrZero(t1, t2 *metav1.Time) bool {
	if t1.Time.IsZero() || t2.Time.IsZero() {
		return t1.Time.IsZero()
	}
	return t1.After(t2.Time)
}

// logRankDiff compares ages on a log2 scale, so pods of similar age are
// ranked alike (upstream's LogarithmicScaleDown).
func logRankDiff(t1, t2, now metav1.Time) int64 {
	r := func(t metav1.Time) int64 {
		if d := now.Sub(t.Time); d > 0 {
			return int64(math.Log2(float64(d)))
		}
		return -1
	}
	return r(t1) - r(t2)
}

func deletionCost(p *v1.Pod) int64 {
	n, err := strconv.ParseInt(p.Annotations[podDeletionCost], 10, 32)
	if err != nil {
		return 0
	}
	return n
}

func maxRestarts(p *v1.Pod) int32 {
	var m int32
	for _, s := range p.Status.ContainerStatuses {
		m = max(m, s.RestartCount)
	}
	return m
}

// activePods drops finished pods and pods being deleted: they do not count.
func activePods(pods []*v1.Pod) []*v1.Pod {
	var out []*v1.Pod
	for _, p := range pods {
		if p.Status.Phase != v1.PodSucceeded && p.Status.Phase != v1.PodFailed && p.DeletionTimestamp == nil {
			out = append(out, p)
		}
	}
	return out
}

func readyCondition(p *v1.Pod) *v1.PodCondition { return podutil.Condition(&p.Status, v1.PodReady) }

func isReady(p *v1.Pod) bool {
	c := readyCondition(p)
	return c != nil && c.Status == v1.ConditionTrue
}

func readyTime(p *v1.Pod) *metav1.Time {
	if c := readyCondition(p); c != nil && c.Status == v1.ConditionTrue {
		return &c.LastTransitionTime
	}
	return &metav1.Time{}
}

// isAvailable: ready for at least minReadySeconds.
func isAvailable(p *v1.Pod, minReadySeconds int32, now time.Time) bool {
	c := readyCondition(p)
	if c == nil || c.Status != v1.ConditionTrue {
		return false
	}
	d := time.Duration(minReadySeconds) * time.Second
	return minReadySeconds == 0 || (!c.LastTransitionTime.IsZero() && c.LastTransitionTime.Add(d).Before(now))
}

func calculateStatus(rs *appsv1.ReplicaSet, pods []*v1.Pod, manageErr error, now time.Time) appsv1.ReplicaSetStatus {
	st := rs.Status
	st.Replicas, st.FullyLabeledReplicas, st.ReadyReplicas, st.AvailableReplicas = int32(len(pods)), 0, 0, 0
	template := labels.Set(rs.Spec.Template.Labels).AsSelectorPreValidated()
	for _, p := range pods {
		if template.Matches(labels.Set(p.Labels)) {
			st.FullyLabeledReplicas++
		}
		if isReady(p) {
			st.ReadyReplicas++
			if isAvailable(p, rs.Spec.MinReadySeconds, now) {
				st.AvailableReplicas++
			}
		}
	}
	var failure *appsv1.ReplicaSetCondition
	for i := range st.Conditions {
		if st.Conditions[i].Type == appsv1.ReplicaSetReplicaFailure {
			failure = &st.Conditions[i]
		}
	}
	switch {
	case manageErr != nil && failure == nil:
		reason := "FailedCreate"
		if len(pods) > int(*rs.Spec.Replicas) {
			reason = "FailedDelete"
		}
		st.Conditions = append(append([]appsv1.ReplicaSetCondition(nil), st.Conditions...), appsv1.ReplicaSetCondition{
			Type: appsv1.ReplicaSetReplicaFailure, Status: v1.ConditionTrue, Reason: reason,
			Message: manageErr.Error(), LastTransitionTime: metav1.NewTime(now),
		})
	case manageErr == nil && failure != nil:
		var keep []appsv1.ReplicaSetCondition
		for _, c := range st.Conditions {
			if c.Type != appsv1.ReplicaSetReplicaFailure {
				keep = append(keep, c)
			}
		}
		st.Conditions = keep
	}
	return st
}
