package deployment

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"math"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/dump"
)

// Annotations and condition reasons, as upstream's deployment/util.
const (
	RevisionAnnotation        = "deployment.kubernetes.io/revision"
	RevisionHistoryAnnotation = "deployment.kubernetes.io/revision-history"
	DesiredReplicasAnnotation = "deployment.kubernetes.io/desired-replicas"
	MaxReplicasAnnotation     = "deployment.kubernetes.io/max-replicas"

	NewReplicaSetReason        = "NewReplicaSetCreated"
	FoundNewRSReason           = "FoundNewReplicaSet"
	FailedRSCreateReason       = "ReplicaSetCreateError"
	ReplicaSetUpdatedReason    = "ReplicaSetUpdated"
	NewRSAvailableReason       = "NewReplicaSetAvailable"
	TimedOutReason             = "ProgressDeadlineExceeded"
	MinimumReplicasAvailable   = "MinimumReplicasAvailable"
	MinimumReplicasUnavailable = "MinimumReplicasUnavailable"
)

// annotations a Deployment does not copy to its ReplicaSets.
var skipCopy = map[string]bool{
	"kubectl.kubernetes.io/last-applied-configuration": true,
	RevisionAnnotation: true, RevisionHistoryAnnotation: true,
	DesiredReplicasAnnotation: true, MaxReplicasAnnotation: true,
	"deprecated.deployment.rollback.to": true,
}

// ComputeHash is upstream's pod-template-hash: fnv32a over the template as
// dumped by DeepHashObject, plus the collision count, safely encoded.
func ComputeHash(template *v1.PodTemplateSpec, collisionCount *int32) string {
	h := fnv.New32a()
	fmt.Fprintf(h, "%v", dump.ForHash(*template))
	if collisionCount != nil {
		b := make([]byte, 8)
		binary.LittleEndian.PutUint32(b, uint32(*collisionCount))
		h.Write(b)
	}
	return rand.SafeEncodeString(fmt.Sprint(h.Sum32()))
}

// equalIgnoreHash compares templates without the pod-template-hash label.
func equalIgnoreHash(a, b *v1.PodTemplateSpec) bool {
	a, b = a.DeepCopy(), b.DeepCopy()
	delete(a.Labels, appsv1.DefaultDeploymentUniqueLabelKey)
	delete(b.Labels, appsv1.DefaultDeploymentUniqueLabelKey)
	return apiequality.Semantic.DeepEqual(a, b)
}

func withLabel(m map[string]string, k, v string) map[string]string {
	out := make(map[string]string, len(m)+1)
	for key, val := range m {
		out[key] = val
	}
	out[k] = v
	return out
}

func revisionOf(rs *appsv1.ReplicaSet) int64 {
	n, _ := strconv.ParseInt(rs.Annotations[RevisionAnnotation], 10, 64)
	return n
}

func maxRevision(rss []*appsv1.ReplicaSet) int64 {
	var m int64
	for _, rs := range rss {
		m = max(m, revisionOf(rs))
	}
	return m
}

// setNewRSAnnotations copies the Deployment's annotations and raises the
// revision (keeping the old one in revision-history on a rollback).
func setNewRSAnnotations(d *appsv1.Deployment, rs *appsv1.ReplicaSet, revision string, exists bool) bool {
	changed := false
	if rs.Annotations == nil {
		rs.Annotations = map[string]string{}
	}
	for k, v := range d.Annotations {
		if !skipCopy[k] && rs.Annotations[k] != v {
			rs.Annotations[k], changed = v, true
		}
	}
	old, had := rs.Annotations[RevisionAnnotation]
	oldN, err := strconv.ParseInt(old, 10, 64)
	if err != nil && old != "" {
		return changed
	}
	if newN, _ := strconv.ParseInt(revision, 10, 64); oldN < newN {
		rs.Annotations[RevisionAnnotation], changed = revision, true
		if had {
			rs.Annotations[RevisionHistoryAnnotation] = appendRevisionHistory(rs.Annotations[RevisionHistoryAnnotation], old)
		}
	}
	if !exists && setReplicasAnnotations(rs, *d.Spec.Replicas, *d.Spec.Replicas+maxSurge(d)) {
		changed = true
	}
	return changed
}

// maxRevisionHistoryChars bounds the revision-history annotation, as
// upstream's (an annotation must stay small; the oldest entries go).
const maxRevisionHistoryChars = 2000

// appendRevisionHistory adds revision to the comma-separated history,
// dropping the oldest entries beyond maxRevisionHistoryChars.
func appendRevisionHistory(history, revision string) string {
	if history == "" {
		return revision
	}
	entries := append(strings.Split(history, ","), revision)
	total := len(history) + 1 + len(revision)
	for total > maxRevisionHistoryChars && len(entries) > 1 {
		total -= len(entries[0]) + 1
		entries = entries[1:]
	}
	return strings.Join(entries, ",")
}

func setRevision(d *appsv1.Deployment, revision string) bool {
	if revision == "" || d.Annotations[RevisionAnnotation] == revision {
		return false
	}
	if d.Annotations == nil {
		d.Annotations = map[string]string{}
	}
	d.Annotations[RevisionAnnotation] = revision
	return true
}

func setReplicasAnnotations(rs *appsv1.ReplicaSet, desired, maxReplicas int32) bool {
	if rs.Annotations == nil {
		rs.Annotations = map[string]string{}
	}
	d, m := strconv.Itoa(int(desired)), strconv.Itoa(int(maxReplicas))
	if rs.Annotations[DesiredReplicasAnnotation] == d && rs.Annotations[MaxReplicasAnnotation] == m {
		return false
	}
	rs.Annotations[DesiredReplicasAnnotation], rs.Annotations[MaxReplicasAnnotation] = d, m
	return true
}

func intAnnotation(rs *appsv1.ReplicaSet, key string) (int32, bool) {
	v, ok := rs.Annotations[key]
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(v, 10, 32)
	return int32(n), err == nil
}

// resolveFenceposts scales maxSurge (up) and maxUnavailable (down) against
// the replicas; both zero would stall, so maxUnavailable becomes 1.
func resolveFenceposts(d *appsv1.Deployment) (surge, unavailable int32) {
	def := intstr.FromString("25%")
	var s, u *intstr.IntOrString
	if ru := d.Spec.Strategy.RollingUpdate; ru != nil {
		s, u = ru.MaxSurge, ru.MaxUnavailable
	}
	sv, _ := intstr.GetScaledValueFromIntOrPercent(intstr.ValueOrDefault(s, def), int(*d.Spec.Replicas), true)
	uv, _ := intstr.GetScaledValueFromIntOrPercent(intstr.ValueOrDefault(u, def), int(*d.Spec.Replicas), false)
	if sv == 0 && uv == 0 {
		uv = 1
	}
	return int32(sv), int32(uv)
}

func isRolling(d *appsv1.Deployment) bool {
	return d.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType
}

func maxSurge(d *appsv1.Deployment) int32 {
	if !isRolling(d) {
		return 0
	}
	s, _ := resolveFenceposts(d)
	return s
}

func maxUnavailable(d *appsv1.Deployment) int32 {
	if !isRolling(d) || *d.Spec.Replicas == 0 {
		return 0
	}
	_, u := resolveFenceposts(d)
	return min(u, *d.Spec.Replicas)
}

// newRSNewReplicas is the new ReplicaSet's next size.
func newRSNewReplicas(d *appsv1.Deployment, allRSs []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet) (int32, error) {
	if !isRolling(d) {
		return *d.Spec.Replicas, nil
	}
	current := replicaCount(allRSs)
	maxTotal := *d.Spec.Replicas + maxSurge(d)
	if current >= maxTotal {
		return *newRS.Spec.Replicas, nil
	}
	up := min(maxTotal-current, *d.Spec.Replicas-*newRS.Spec.Replicas)
	return *newRS.Spec.Replicas + up, nil
}

func activeRSs(rss []*appsv1.ReplicaSet) []*appsv1.ReplicaSet {
	var out []*appsv1.ReplicaSet
	for _, rs := range rss {
		if rs != nil && *rs.Spec.Replicas > 0 {
			out = append(out, rs)
		}
	}
	return out
}

func sum(rss []*appsv1.ReplicaSet, f func(*appsv1.ReplicaSet) int32) int32 {
	var n int32
	for _, rs := range rss {
		if rs != nil {
			n += f(rs)
		}
	}
	return n
}

func replicaCount(rss []*appsv1.ReplicaSet) int32 {
	return sum(rss, func(rs *appsv1.ReplicaSet) int32 { return *rs.Spec.Replicas })
}
func actualCount(rss []*appsv1.ReplicaSet) int32 {
	return sum(rss, func(rs *appsv1.ReplicaSet) int32 { return rs.Status.Replicas })
}
func availableCount(rss []*appsv1.ReplicaSet) int32 {
	return sum(rss, func(rs *appsv1.ReplicaSet) int32 { return rs.Status.AvailableReplicas })
}
func readyCount(rss []*appsv1.ReplicaSet) int32 {
	return sum(rss, func(rs *appsv1.ReplicaSet) int32 { return rs.Status.ReadyReplicas })
}

// activeOrLatest is the only active ReplicaSet, or the newest when none is.
func activeOrLatest(newRS *appsv1.ReplicaSet, oldRSs []*appsv1.ReplicaSet) *appsv1.ReplicaSet {
	if newRS == nil && len(oldRSs) == 0 {
		return nil
	}
	active := activeRSs(append(append([]*appsv1.ReplicaSet(nil), oldRSs...), newRS))
	switch len(active) {
	case 0:
		if newRS != nil {
			return newRS
		}
		latest := oldRSs[0]
		for _, rs := range oldRSs {
			if latest.CreationTimestamp.Before(&rs.CreationTimestamp) {
				latest = rs
			}
		}
		return latest
	case 1:
		return active[0]
	}
	return nil
}

func isSaturated(d *appsv1.Deployment, rs *appsv1.ReplicaSet) bool {
	if rs == nil {
		return false
	}
	desired, ok := intAnnotation(rs, DesiredReplicasAnnotation)
	return ok && *rs.Spec.Replicas == *d.Spec.Replicas && desired == *d.Spec.Replicas &&
		rs.Status.AvailableReplicas == *d.Spec.Replicas
}

// proportion is rs's share of a scaling by toAdd, as upstream's
// GetProportion: by its size relative to the max-replicas it was sized for.
func proportion(rs *appsv1.ReplicaSet, d *appsv1.Deployment, toAdd, added int32) int32 {
	if rs == nil || *rs.Spec.Replicas == 0 || toAdd == 0 || toAdd == added {
		return 0
	}
	var fraction int32
	if *d.Spec.Replicas == 0 {
		fraction = -*rs.Spec.Replicas
	} else {
		before, ok := intAnnotation(rs, MaxReplicasAnnotation)
		if !ok || before == 0 {
			before = d.Status.Replicas
		}
		if before != 0 {
			size := float64(*rs.Spec.Replicas*(*d.Spec.Replicas+maxSurge(d))) / float64(before)
			fraction = int32(math.Round(size)) - *rs.Spec.Replicas
		}
	}
	allowed := toAdd - added
	if toAdd > 0 {
		return min(fraction, allowed)
	}
	return max(fraction, allowed)
}

type byCreation []*appsv1.ReplicaSet

func (o byCreation) Len() int      { return len(o) }
func (o byCreation) Swap(i, j int) { o[i], o[j] = o[j], o[i] }
func (o byCreation) Less(i, j int) bool {
	if o[i].CreationTimestamp.Equal(&o[j].CreationTimestamp) {
		return o[i].Name < o[j].Name
	}
	return o[i].CreationTimestamp.Before(&o[j].CreationTimestamp)
}

// bySizeNewer: larger first, then newer.
type bySizeNewer []*appsv1.ReplicaSet

func (o bySizeNewer) Len() int      { return len(o) }
func (o bySizeNewer) Swap(i, j int) { o[i], o[j] = o[j], o[i] }
func (o bySizeNewer) Less(i, j int) bool {
	if *o[i].Spec.Replicas == *o[j].Spec.Replicas {
		return byCreation(o).Less(j, i)
	}
	return *o[i].Spec.Replicas > *o[j].Spec.Replicas
}

// bySizeOlder: larger first, then older.
type bySizeOlder []*appsv1.ReplicaSet

func (o bySizeOlder) Len() int      { return len(o) }
func (o bySizeOlder) Swap(i, j int) { o[i], o[j] = o[j], o[i] }
func (o bySizeOlder) Less(i, j int) bool {
	if *o[i].Spec.Replicas == *o[j].Spec.Replicas {
		return byCreation(o).Less(i, j)
	}
	return *o[i].Spec.Replicas > *o[j].Spec.Replicas
}

type byRevision []*appsv1.ReplicaSet

func (o byRevision) Len() int      { return len(o) }
func (o byRevision) Swap(i, j int) { o[i], o[j] = o[j], o[i] }
func (o byRevision) Less(i, j int) bool {
	if ri, rj := revisionOf(o[i]), revisionOf(o[j]); ri != rj {
		return ri < rj
	}
	return byCreation(o).Less(i, j)
}

// calculateStatus is the Deployment status its ReplicaSets imply, with the
// Available condition.
func calculateStatus(allRSs []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet, d *appsv1.Deployment, now time.Time) appsv1.DeploymentStatus {
	available := availableCount(allRSs)
	st := appsv1.DeploymentStatus{
		ObservedGeneration:  d.Generation,
		Replicas:            actualCount(allRSs),
		UpdatedReplicas:     actualCount([]*appsv1.ReplicaSet{newRS}),
		ReadyReplicas:       readyCount(allRSs),
		AvailableReplicas:   available,
		UnavailableReplicas: max(replicaCount(allRSs)-available, 0),
		CollisionCount:      d.Status.CollisionCount,
		Conditions:          append([]appsv1.DeploymentCondition(nil), d.Status.Conditions...),
	}
	if available >= *d.Spec.Replicas-maxUnavailable(d) {
		setCondition(&st, newCondition(appsv1.DeploymentAvailable, v1.ConditionTrue, MinimumReplicasAvailable, "Deployment has minimum availability.", now))
	} else {
		setCondition(&st, newCondition(appsv1.DeploymentAvailable, v1.ConditionFalse, MinimumReplicasUnavailable, "Deployment does not have minimum availability.", now))
	}
	return st
}

func deploymentComplete(d *appsv1.Deployment, st *appsv1.DeploymentStatus) bool {
	n := *d.Spec.Replicas
	return st.UpdatedReplicas == n && st.Replicas == n && st.AvailableReplicas == n && st.ObservedGeneration >= d.Generation
}

func deploymentProgressing(d *appsv1.Deployment, st *appsv1.DeploymentStatus) bool {
	old := d.Status
	return st.UpdatedReplicas > old.UpdatedReplicas || st.Replicas-st.UpdatedReplicas < old.Replicas-old.UpdatedReplicas ||
		st.ReadyReplicas > old.ReadyReplicas || st.AvailableReplicas > old.AvailableReplicas
}

func deploymentTimedOut(d *appsv1.Deployment, st *appsv1.DeploymentStatus, now time.Time) bool {
	c := getCondition(*st, appsv1.DeploymentProgressing)
	if !hasProgressDeadline(d) || c == nil || c.Reason == NewRSAvailableReason {
		return false
	}
	return c.Reason == TimedOutReason || c.LastUpdateTime.Add(secondsOf(*d.Spec.ProgressDeadlineSeconds)).Before(now)
}

func hasProgressDeadline(d *appsv1.Deployment) bool {
	return d.Spec.ProgressDeadlineSeconds != nil && *d.Spec.ProgressDeadlineSeconds != math.MaxInt32
}

func secondsOf(n int32) time.Duration { return time.Duration(n) * time.Second }

func newCondition(t appsv1.DeploymentConditionType, s v1.ConditionStatus, reason, msg string, now time.Time) appsv1.DeploymentCondition {
	ts := metav1.NewTime(now)
	return appsv1.DeploymentCondition{Type: t, Status: s, Reason: reason, Message: msg, LastUpdateTime: ts, LastTransitionTime: ts}
}

func getCondition(st appsv1.DeploymentStatus, t appsv1.DeploymentConditionType) *appsv1.DeploymentCondition {
	for i := range st.Conditions {
		if st.Conditions[i].Type == t {
			return &st.Conditions[i]
		}
	}
	return nil
}

// setCondition keeps the transition time when the status does not change,
// and leaves an identical (status, reason) condition untouched.
func setCondition(st *appsv1.DeploymentStatus, c appsv1.DeploymentCondition) {
	cur := getCondition(*st, c.Type)
	if cur != nil && cur.Status == c.Status && cur.Reason == c.Reason {
		return
	}
	if cur != nil && cur.Status == c.Status {
		c.LastTransitionTime = cur.LastTransitionTime
	}
	removeCondition(st, c.Type)
	st.Conditions = append(st.Conditions, c)
}

func removeCondition(st *appsv1.DeploymentStatus, t appsv1.DeploymentConditionType) {
	var keep []appsv1.DeploymentCondition
	for _, c := range st.Conditions {
		if c.Type != t {
			keep = append(keep, c)
		}
	}
	st.Conditions = keep
}
