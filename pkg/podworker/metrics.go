package podworker

import (
	"time"

	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
)

// Observer receives the pod workers' measurements (pkg/metrics).
type Observer interface {
	// PodWorkerDuration reports one pass of a worker, by upstream's
	// update type: create, update, sync or kill.
	PodWorkerDuration(operation string, d time.Duration)
	// ImagePullStarted and ImagePullFinished bracket a pull for the pod;
	// d includes the wait for the pull's turn, sizeBytes is 0 if unknown.
	ImagePullStarted(pod types.UID)
	ImagePullFinished(pod types.UID, d time.Duration, sizeBytes uint64)
	// PodStarted reports, once, that all the pod's containers run.
	PodStarted(pod *v1.Pod, firstSeen, running time.Time)
	// PodForgotten reports that the pod's worker ended.
	PodForgotten(pod types.UID)
	// PodPreempted reports a pod stopped to admit a critical pod, by the
	// first resource it lacked (upstream's preemption_signal).
	PodPreempted(signal string)
}

type noMetrics struct{}

func (noMetrics) PodWorkerDuration(string, time.Duration)            {}
func (noMetrics) ImagePullStarted(types.UID)                         {}
func (noMetrics) ImagePullFinished(types.UID, time.Duration, uint64) {}
func (noMetrics) PodStarted(*v1.Pod, time.Time, time.Time)           {}
func (noMetrics) PodForgotten(types.UID)                             {}
func (noMetrics) PodPreempted(string)                                {}

// The kubelet's pod update types, the pod_worker_duration_seconds labels.
const (
	opCreate = "create"
	opUpdate = "update"
	opSync   = "sync"
	opKill   = "kill"
)

// noteWorkLocked records why the next pass runs: the kubelet times a pass
// from when its update arrived, and the first reason wins until it runs.
func (w *worker) noteWorkLocked(op string) {
	if w.op == "" || op == opKill {
		w.op, w.opSince = op, w.d.now()
	}
}

// takeWork returns the reason and start of the pass about to run; a pass
// nobody asked for (resync, runtime event, probe) is a sync from now.
func (w *worker) takeWork() (string, time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	op, since := w.op, w.opSince
	w.op, w.opSince = "", time.Time{}
	if op == "" {
		return opSync, w.d.now()
	}
	return op, since
}

// podUpdated tells an update worth a pass of its own from the same pod
// handed over again with the whole pod set. As the kubelet's pod config
// (podsDifferSemantically), a change of the spec, labels, annotations or
// deletion is; a status-only change, most often the echo of the agent's
// own status write, is not, else every status write of one pod would
// resync every pod on the node. Two status changes are (the kubelet's
// HandlePodReconcile): someone else finishing the pod, and the conditions
// the kubelet does not own, which readiness gates read.
func podUpdated(old, cur *v1.Pod) bool {
	return !apiequality.Semantic.DeepEqual(old.Spec, cur.Spec) ||
		!apiequality.Semantic.DeepEqual(old.Labels, cur.Labels) ||
		!apiequality.Semantic.DeepEqual(old.Annotations, cur.Annotations) ||
		!old.DeletionTimestamp.Equal(cur.DeletionTimestamp) ||
		!ptrEqual(old.DeletionGracePeriodSeconds, cur.DeletionGracePeriodSeconds) ||
		finishedInAPI(old) != finishedInAPI(cur) ||
		!apiequality.Semantic.DeepEqual(foreignConditions(old), foreignConditions(cur))
}

func ptrEqual[T comparable](a, b *T) bool {
	return a == b || (a != nil && b != nil && *a == *b)
}

// containersStarted is upstream's "pod started" for the start SLI: every app
// container runs.
func containersStarted(s *v1.PodStatus) bool {
	for _, cs := range s.ContainerStatuses {
		if cs.State.Running == nil || cs.State.Running.StartedAt.IsZero() {
			return false
		}
	}
	return true
}
