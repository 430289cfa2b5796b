package deployment

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodeagent/nodeagent/pkg/controlplane/controller/internal/ctrlutil"
)

// getAllReplicaSets splits rsList into the new ReplicaSet (the one whose
// template equals the Deployment's) and the old ones, syncing the new
// one's revision; with create it creates a missing new ReplicaSet.
func (c *Controller) getAllReplicaSets(ctx context.Context, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet, create bool) (*appsv1.ReplicaSet, []*appsv1.ReplicaSet, error) {
	sort.Sort(byCreation(rsList))
	var newRS *appsv1.ReplicaSet
	var oldRSs []*appsv1.ReplicaSet
	for _, rs := range rsList {
		if newRS == nil && equalIgnoreHash(&rs.Spec.Template, &d.Spec.Template) {
			newRS = rs
			continue
		}
		oldRSs = append(oldRSs, rs)
	}
	newRS, err := c.getNewReplicaSet(ctx, d, newRS, oldRSs, create)
	return newRS, oldRSs, err
}

func (c *Controller) getNewReplicaSet(ctx context.Context, d *appsv1.Deployment, existing *appsv1.ReplicaSet, oldRSs []*appsv1.ReplicaSet, create bool) (*appsv1.ReplicaSet, error) {
	revision := strconv.FormatInt(maxRevision(oldRSs)+1, 10)
	if existing != nil {
		rs := existing.DeepCopy()
		changed := setNewRSAnnotations(d, rs, revision, true)
		if rs.Spec.MinReadySeconds != d.Spec.MinReadySeconds {
			rs.Spec.MinReadySeconds, changed = d.Spec.MinReadySeconds, true
		}
		if changed {
			var err error
			if rs, err = c.client.AppsV1().ReplicaSets(rs.Namespace).Update(ctx, rs, metav1.UpdateOptions{}); err != nil {
				return nil, err
			}
		}
		statusChanged := setRevision(d, rs.Annotations[RevisionAnnotation])
		if hasProgressDeadline(d) && getCondition(d.Status, appsv1.DeploymentProgressing) == nil {
			setCondition(&d.Status, newCondition(appsv1.DeploymentProgressing, v1.ConditionTrue, FoundNewRSReason,
				fmt.Sprintf("Found new replica set %q", rs.Name), c.now()))
			statusChanged = true
		}
		if statusChanged {
			return rs, c.updateDeployment(ctx, d)
		}
		return rs, nil
	}
	if !create {
		return nil, nil
	}
	hash := ComputeHash(&d.Spec.Template, d.Status.CollisionCount)
	template := d.Spec.Template.DeepCopy()
	template.Labels = withLabel(template.Labels, appsv1.DefaultDeploymentUniqueLabelKey, hash)
	sel := d.Spec.Selector.DeepCopy()
	sel.MatchLabels = withLabel(sel.MatchLabels, appsv1.DefaultDeploymentUniqueLabelKey, hash)
	zero := int32(0)
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{
			Name:            d.Name + "-" + hash,
			Namespace:       d.Namespace,
			OwnerReferences: []metav1.OwnerReference{*ctrlutil.NewControllerRef(d, controllerKind)},
			Labels:          template.Labels,
		},
		Spec: appsv1.ReplicaSetSpec{Replicas: &zero, MinReadySeconds: d.Spec.MinReadySeconds, Selector: sel, Template: *template},
	}
	replicas, err := newRSNewReplicas(d, append(oldRSs, rs), rs)
	if err != nil {
		return nil, err
	}
	rs.Spec.Replicas = &replicas
	setNewRSAnnotations(d, rs, revision, false)
	created, err := c.client.AppsV1().ReplicaSets(d.Namespace).Create(ctx, rs, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		// Ours already (the cache lags), or a hash collision.
		cur, gerr := c.client.AppsV1().ReplicaSets(d.Namespace).Get(ctx, rs.Name, metav1.GetOptions{})
		if gerr != nil {
			return nil, gerr
		}
		if ref := metav1.GetControllerOf(cur); ref != nil && ref.UID == d.UID && equalIgnoreHash(&cur.Spec.Template, &d.Spec.Template) {
			return cur, nil
		}
		n := int32(0)
		if d.Status.CollisionCount != nil {
			n = *d.Status.CollisionCount
		}
		n++
		d.Status.CollisionCount = &n
		if _, uerr := c.client.AppsV1().Deployments(d.Namespace).UpdateStatus(ctx, d, metav1.UpdateOptions{}); uerr != nil {
			return nil, uerr
		}
		return nil, fmt.Errorf("hash collision for replica set %s: retrying with collisionCount %d", rs.Name, n)
	}
	switch {
	case apierrors.HasStatusCause(err, v1.NamespaceTerminatingCause):
		return nil, err // every create fails from now on: nothing to report
	case err != nil:
		msg := fmt.Sprintf("Failed to create new replica set %q: %v", rs.Name, err)
		if hasProgressDeadline(d) {
			setCondition(&d.Status, newCondition(appsv1.DeploymentProgressing, v1.ConditionFalse, FailedRSCreateReason, msg, c.now()))
			_, _ = c.client.AppsV1().Deployments(d.Namespace).UpdateStatus(ctx, d, metav1.UpdateOptions{})
		}
		c.recorder.Event(d, v1.EventTypeWarning, FailedRSCreateReason, msg)
		return nil, err
	}
	c.log.Info("created new replica set", "deployment", ctrlutil.Key(d), "replicaset", created.Name, "replicas", replicas)
	if replicas > 0 {
		c.recorder.Eventf(d, v1.EventTypeNormal, "ScalingReplicaSet", "Scaled up replica set %s from 0 to %d", created.Name, replicas)
	}
	setRevision(d, revision)
	if hasProgressDeadline(d) {
		setCondition(&d.Status, newCondition(appsv1.DeploymentProgressing, v1.ConditionTrue, NewReplicaSetReason,
			fmt.Sprintf("Created new replica set %q", created.Name), c.now()))
	}
	return created, c.updateDeployment(ctx, d)
}

// updateDeployment writes the status and the revision annotation through
// the status subresource (which keeps annotations, and so does not bump
// the generation, as upstream); d is refreshed from the result.
func (c *Controller) updateDeployment(ctx context.Context, d *appsv1.Deployment) error {
	updated, err := c.client.AppsV1().Deployments(d.Namespace).UpdateStatus(ctx, d, metav1.UpdateOptions{})
	if err != nil {
		return err
	}
	*d = *updated
	return nil
}

func (c *Controller) rolloutRolling(ctx context.Context, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) error {
	newRS, oldRSs, err := c.getAllReplicaSets(ctx, d, rsList, true)
	if err != nil {
		return err
	}
	allRSs := append(append([]*appsv1.ReplicaSet(nil), oldRSs...), newRS)
	scaledUp, err := c.reconcileNewReplicaSet(ctx, allRSs, newRS, d)
	if err != nil {
		return err
	}
	if scaledUp {
		return c.syncRolloutStatus(ctx, allRSs, newRS, d)
	}
	scaledDown, err := c.reconcileOldReplicaSets(ctx, allRSs, activeRSs(oldRSs), newRS, d)
	if err != nil {
		return err
	}
	if scaledDown {
		return c.syncRolloutStatus(ctx, allRSs, newRS, d)
	}
	if deploymentComplete(d, &d.Status) {
		if err := c.cleanup(ctx, oldRSs, d); err != nil {
			return err
		}
	}
	return c.syncRolloutStatus(ctx, allRSs, newRS, d)
}

func (c *Controller) reconcileNewReplicaSet(ctx context.Context, allRSs []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet, d *appsv1.Deployment) (bool, error) {
	switch want := *d.Spec.Replicas; {
	case *newRS.Spec.Replicas == want:
		return false, nil
	case *newRS.Spec.Replicas > want:
		return c.scaleReplicaSet(ctx, newRS, want, d)
	}
	n, err := newRSNewReplicas(d, allRSs, newRS)
	if err != nil {
		return false, err
	}
	return c.scaleReplicaSet(ctx, newRS, n, d)
}

// reconcileOldReplicaSets scales old ReplicaSets down as far as
// maxUnavailable allows: first their unhealthy replicas, then available
// ones, oldest first.
func (c *Controller) reconcileOldReplicaSets(ctx context.Context, allRSs, oldRSs []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet, d *appsv1.Deployment) (bool, error) {
	if replicaCount(oldRSs) == 0 {
		return false, nil
	}
	minAvailable := *d.Spec.Replicas - maxUnavailable(d)
	newRSUnavailable := *newRS.Spec.Replicas - newRS.Status.AvailableReplicas
	maxScaledDown := replicaCount(allRSs) - minAvailable - newRSUnavailable
	if maxScaledDown <= 0 {
		return false, nil
	}
	// Unhealthy replicas first: they do not lower availability.
	sort.Sort(byCreation(oldRSs))
	var total int32
	for _, rs := range oldRSs {
		if total >= maxScaledDown {
			break
		}
		if *rs.Spec.Replicas == 0 || *rs.Spec.Replicas == rs.Status.AvailableReplicas {
			continue
		}
		if rs.Status.AvailableReplicas > *rs.Spec.Replicas {
			// A status from before the last scale-down: scaling by it would
			// scale up. Upstream refuses too; retry once the status is fresh.
			return false, fmt.Errorf("replica set %s reports %d available replicas for %d wanted: waiting for a fresh status",
				rs.Name, rs.Status.AvailableReplicas, *rs.Spec.Replicas)
		}
		n := min(maxScaledDown-total, *rs.Spec.Replicas-rs.Status.AvailableReplicas)
		if _, err := c.scaleReplicaSet(ctx, rs, *rs.Spec.Replicas-n, d); err != nil {
			return false, err
		}
		total += n
	}
	// Then available ones, down to minAvailable.
	available := availableCount(append(append([]*appsv1.ReplicaSet(nil), oldRSs...), newRS))
	if available > minAvailable {
		toScale := available - minAvailable
		var scaled int32
		for _, rs := range oldRSs {
			if scaled >= toScale {
				break
			}
			if *rs.Spec.Replicas == 0 {
				continue
			}
			n := min(*rs.Spec.Replicas, toScale-scaled)
			if _, err := c.scaleReplicaSet(ctx, rs, *rs.Spec.Replicas-n, d); err != nil {
				return false, err
			}
			scaled += n
		}
		total += scaled
	}
	return total > 0, nil
}

// rolloutRecreate scales every old ReplicaSet to zero, waits until no old
// pod runs, then creates the new ReplicaSet at full size.
func (c *Controller) rolloutRecreate(ctx context.Context, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) error {
	newRS, oldRSs, err := c.getAllReplicaSets(ctx, d, rsList, false)
	if err != nil {
		return err
	}
	allRSs := append(append([]*appsv1.ReplicaSet(nil), oldRSs...), newRS)
	scaled := false
	for _, rs := range activeRSs(oldRSs) {
		ok, err := c.scaleReplicaSet(ctx, rs, 0, d)
		if err != nil {
			return err
		}
		scaled = scaled || ok
	}
	if scaled {
		return c.syncRolloutStatus(ctx, allRSs, newRS, d)
	}
	podMap, err := c.podsByReplicaSet(d, rsList)
	if err != nil {
		return err
	}
	if oldPodsRunning(newRS, oldRSs, podMap) {
		return c.syncRolloutStatus(ctx, allRSs, newRS, d)
	}
	if newRS == nil {
		if newRS, oldRSs, err = c.getAllReplicaSets(ctx, d, rsList, true); err != nil {
			return err
		}
		allRSs = append(append([]*appsv1.ReplicaSet(nil), oldRSs...), newRS)
	}
	if _, err := c.scaleReplicaSet(ctx, newRS, *d.Spec.Replicas, d); err != nil {
		return err
	}
	if deploymentComplete(d, &d.Status) {
		if err := c.cleanup(ctx, oldRSs, d); err != nil {
			return err
		}
	}
	return c.syncRolloutStatus(ctx, allRSs, newRS, d)
}

func oldPodsRunning(newRS *appsv1.ReplicaSet, oldRSs []*appsv1.ReplicaSet, podMap map[types.UID][]*v1.Pod) bool {
	if actualCount(oldRSs) > 0 {
		return true
	}
	for uid, pods := range podMap {
		if newRS != nil && newRS.UID == uid {
			continue
		}
		for _, p := range pods {
			if p.Status.Phase != v1.PodFailed && p.Status.Phase != v1.PodSucceeded {
				return true
			}
		}
	}
	return false
}

// isScalingEvent: an active ReplicaSet was sized for another replica count.
func (c *Controller) isScalingEvent(ctx context.Context, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) (bool, error) {
	newRS, oldRSs, err := c.getAllReplicaSets(ctx, d, rsList, false)
	if err != nil {
		return false, err
	}
	for _, rs := range activeRSs(append(oldRSs, newRS)) {
		if desired, ok := intAnnotation(rs, DesiredReplicasAnnotation); ok && desired != *d.Spec.Replicas {
			return true, nil
		}
	}
	return false, nil
}

// syncScaleOnly scales without rolling out (paused, or a scaling event).
func (c *Controller) syncScaleOnly(ctx context.Context, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) error {
	newRS, oldRSs, err := c.getAllReplicaSets(ctx, d, rsList, false)
	if err != nil {
		return err
	}
	if err := c.scale(ctx, d, newRS, oldRSs); err != nil {
		return err
	}
	if d.Spec.Paused {
		if err := c.cleanup(ctx, oldRSs, d); err != nil {
			return err
		}
	}
	return c.syncStatus(ctx, append(oldRSs, newRS), newRS, d)
}

// scale sizes the active ReplicaSets for spec.replicas; with several
// active during a rolling update it spreads the change proportionally.
func (c *Controller) scale(ctx context.Context, d *appsv1.Deployment, newRS *appsv1.ReplicaSet, oldRSs []*appsv1.ReplicaSet) error {
	if rs := activeOrLatest(newRS, oldRSs); rs != nil {
		if *rs.Spec.Replicas == *d.Spec.Replicas {
			return nil
		}
		_, err := c.scaleReplicaSet(ctx, rs, *d.Spec.Replicas, d)
		return err
	}
	if isSaturated(d, newRS) {
		for _, rs := range activeRSs(oldRSs) {
			if _, err := c.scaleReplicaSet(ctx, rs, 0, d); err != nil {
				return err
			}
		}
		return nil
	}
	if d.Spec.Strategy.Type == appsv1.RecreateDeploymentStrategyType {
		return nil
	}
	all := activeRSs(append(append([]*appsv1.ReplicaSet(nil), oldRSs...), newRS))
	allowed := int32(0)
	if *d.Spec.Replicas > 0 {
		allowed = *d.Spec.Replicas + maxSurge(d)
	}
	toAdd := allowed - replicaCount(all)
	switch {
	case toAdd > 0:
		sort.Sort(bySizeNewer(all))
	case toAdd < 0:
		sort.Sort(bySizeOlder(all))
	}
	sizes := make([]int32, len(all))
	var added int32
	for i, rs := range all {
		p := proportion(rs, d, toAdd, added)
		sizes[i] = *rs.Spec.Replicas + p
		added += p
	}
	for i, rs := range all {
		if i == 0 && toAdd != 0 { // leftovers go to the largest
			sizes[0] = max(sizes[0]+toAdd-added, 0)
		}
		if _, err := c.scaleReplicaSet(ctx, rs, sizes[i], d); err != nil {
			return err
		}
	}
	return nil
}

// scaleReplicaSet sets the size and the desired/max replicas annotations.
func (c *Controller) scaleReplicaSet(ctx context.Context, rs *appsv1.ReplicaSet, size int32, d *appsv1.Deployment) (bool, error) {
	oldSize := *rs.Spec.Replicas
	sizeChanged := oldSize != size
	cp := rs.DeepCopy()
	annChanged := setReplicasAnnotations(cp, *d.Spec.Replicas, *d.Spec.Replicas+maxSurge(d))
	if !sizeChanged && !annChanged {
		return false, nil
	}
	cp.Spec.Replicas = &size
	updated, err := c.client.AppsV1().ReplicaSets(cp.Namespace).Update(ctx, cp, metav1.UpdateOptions{})
	if err != nil {
		return false, err
	}
	*rs = *updated
	if sizeChanged {
		c.log.Info("scaled replica set", "deployment", ctrlutil.Key(d), "replicaset", rs.Name, "replicas", size)
		op := "up"
		if size < oldSize {
			op = "down"
		}
		c.recorder.Eventf(d, v1.EventTypeNormal, "ScalingReplicaSet", "Scaled %s replica set %s from %d to %d", op, rs.Name, oldSize, size)
	}
	return sizeChanged, nil
}

// cleanup deletes the oldest scaled-down ReplicaSets beyond
// revisionHistoryLimit.
func (c *Controller) cleanup(ctx context.Context, oldRSs []*appsv1.ReplicaSet, d *appsv1.Deployment) error {
	if d.Spec.RevisionHistoryLimit == nil {
		return nil
	}
	var alive []*appsv1.ReplicaSet
	for _, rs := range oldRSs {
		if rs != nil && rs.DeletionTimestamp == nil {
			alive = append(alive, rs)
		}
	}
	diff := len(alive) - int(*d.Spec.RevisionHistoryLimit)
	if diff <= 0 {
		return nil
	}
	sort.Sort(byRevision(alive))
	for _, rs := range alive[:diff] {
		if rs.Status.Replicas != 0 || *rs.Spec.Replicas != 0 || rs.Generation > rs.Status.ObservedGeneration {
			continue
		}
		err := c.client.AppsV1().ReplicaSets(rs.Namespace).Delete(ctx, rs.Name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	return nil
}

// syncRolloutStatus writes the status with the Progressing condition.
func (c *Controller) syncRolloutStatus(ctx context.Context, allRSs []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet, d *appsv1.Deployment) error {
	now := c.now()
	st := calculateStatus(allRSs, newRS, d, now)
	if !hasProgressDeadline(d) {
		removeCondition(&st, appsv1.DeploymentProgressing)
	}
	cur := getCondition(d.Status, appsv1.DeploymentProgressing)
	complete := st.Replicas == st.UpdatedReplicas && cur != nil && cur.Reason == NewRSAvailableReason
	if hasProgressDeadline(d) && !complete {
		rsName := func(format, fallback string) string {
			if newRS != nil {
				return fmt.Sprintf(format, newRS.Name)
			}
			return fmt.Sprintf(fallback, d.Name)
		}
		switch {
		case deploymentComplete(d, &st):
			setCondition(&st, newCondition(appsv1.DeploymentProgressing, v1.ConditionTrue, NewRSAvailableReason,
				rsName("ReplicaSet %q has successfully progressed.", "Deployment %q has successfully progressed."), now))
		case deploymentProgressing(d, &st):
			cond := newCondition(appsv1.DeploymentProgressing, v1.ConditionTrue, ReplicaSetUpdatedReason,
				rsName("ReplicaSet %q is progressing.", "Deployment %q is progressing."), now)
			if cur != nil {
				if cur.Status == v1.ConditionTrue {
					cond.LastTransitionTime = cur.LastTransitionTime
				}
				removeCondition(&st, appsv1.DeploymentProgressing)
			}
			setCondition(&st, cond)
		case deploymentTimedOut(d, &st, now):
			setCondition(&st, newCondition(appsv1.DeploymentProgressing, v1.ConditionFalse, TimedOutReason,
				rsName("ReplicaSet %q has timed out progressing.", "Deployment %q has timed out progressing."), now))
		}
	}
	if apiequality.Semantic.DeepEqual(d.Status, st) {
		c.requeueStuck(d, st)
		return nil
	}
	d.Status = st
	_, err := c.client.AppsV1().Deployments(d.Namespace).UpdateStatus(ctx, d, metav1.UpdateOptions{})
	return err
}

// requeueStuck checks a progressing Deployment again at its deadline.
func (c *Controller) requeueStuck(d *appsv1.Deployment, st appsv1.DeploymentStatus) {
	cur := getCondition(st, appsv1.DeploymentProgressing)
	if cur == nil || cur.Reason == NewRSAvailableReason || cur.Reason == TimedOutReason || !hasProgressDeadline(d) {
		return
	}
	after := cur.LastUpdateTime.Add(secondsOf(*d.Spec.ProgressDeadlineSeconds)).Sub(c.now())
	c.queue.AddAfter(ctrlutil.Key(d), max(after, 0)+time.Second)
}
