package apiclient

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"k8s.io/client-go/util/workqueue"

	"github.com/nodeagent/nodeagent/pkg/podutil"
)

// errMirrorMissing: a static pod's status waits for its mirror pod.
var errMirrorMissing = errors.New("mirror pod not there yet")

// StatusConfig configures StatusManager; Client is required.
type StatusConfig struct {
	Client kubernetes.Interface
	Logger *slog.Logger
	// RetryBase and RetryMax bound the per-pod back-off after a failed
	// update (defaults 200ms and 30s).
	RetryBase, RetryMax time.Duration
	// Written, when set, hears of each status the API holds after an
	// update (written, or already there): the pod start trace's "status
	// reached the API".
	Written func(pod *v1.Pod, status *v1.PodStatus)
}

// StatusManager sends the pod statuses the workers generate to the API
// (pods/status; for static pods, their mirror pod's) and confirms the
// deletion of API pods once the workers have stopped them. Updates of one
// pod are coalesced: the latest status wins.
type StatusManager struct {
	cfg   StatusConfig
	log   *slog.Logger
	queue workqueue.TypedRateLimitingInterface[types.UID]

	mu      sync.Mutex
	pending map[types.UID]*statusEntry
}

type statusEntry struct {
	pod     *v1.Pod
	status  *v1.PodStatus // nil: nothing to send
	confirm bool          // delete once the status is sent
	gen     int
}

// NewStatusManager checks cfg and applies the defaults.
func NewStatusManager(cfg StatusConfig) (*StatusManager, error) {
	if cfg.Client == nil {
		return nil, errors.New("apiclient: status manager needs Client")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.RetryBase <= 0 {
		cfg.RetryBase = 200 * time.Millisecond
	}
	if cfg.RetryMax <= 0 {
		cfg.RetryMax = 30 * time.Second
	}
	return &StatusManager{
		cfg: cfg,
		log: cfg.Logger.With("component", "statusmanager"),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[types.UID](cfg.RetryBase, cfg.RetryMax),
			workqueue.TypedRateLimitingQueueConfig[types.UID]{Name: "podstatus"}),
		pending: map[types.UID]*statusEntry{},
	}, nil
}

// OnStatus is podworker.Config.OnStatus: it queues the status and returns.
func (s *StatusManager) OnStatus(pod *v1.Pod, status v1.PodStatus) {
	s.enqueue(pod, func(e *statusEntry) { e.status = status.DeepCopy() })
}

// OnTerminated is podworker.Config.OnTerminated: a deleted API pod is
// deleted for good (grace period 0, UID precondition) after its last
// status is sent.
func (s *StatusManager) OnTerminated(pod *v1.Pod) {
	if !isAPIPod(pod) || pod.DeletionTimestamp == nil {
		return // static pods: their mirror goes with them; others left the API already
	}
	s.enqueue(pod, func(e *statusEntry) { e.confirm = true })
}

func (s *StatusManager) enqueue(pod *v1.Pod, set func(*statusEntry)) {
	s.mu.Lock()
	e := s.pending[pod.UID]
	if e == nil {
		e = &statusEntry{}
		s.pending[pod.UID] = e
	}
	e.pod = pod.DeepCopy()
	e.gen++
	set(e)
	s.mu.Unlock()
	s.queue.Add(pod.UID)
}

// Run sends queued updates until ctx ends.
func (s *StatusManager) Run(ctx context.Context) error {
	go func() {
		<-ctx.Done()
		s.queue.ShutDown()
	}()
	for {
		uid, quit := s.queue.Get()
		if quit {
			return nil
		}
		s.process(ctx, uid)
		s.queue.Done(uid)
	}
}

func (s *StatusManager) process(ctx context.Context, uid types.UID) {
	s.mu.Lock()
	e := s.pending[uid]
	var cp statusEntry
	if e != nil {
		cp = *e
	}
	s.mu.Unlock()
	if e == nil {
		s.queue.Forget(uid)
		return
	}
	err := s.sync(ctx, &cp)
	if err != nil && ctx.Err() == nil {
		if !errors.Is(err, errMirrorMissing) {
			s.log.Warn("pod status", "pod", cp.pod.Namespace+"/"+cp.pod.Name, "podUID", uid, "err", err)
		}
		s.queue.AddRateLimited(uid)
		return
	}
	s.queue.Forget(uid)
	s.mu.Lock()
	if cur := s.pending[uid]; cur != nil && cur.gen == cp.gen {
		delete(s.pending, uid) // nothing newer arrived meanwhile
	}
	s.mu.Unlock()
}

// sync sends one entry: the status, then the deletion.
func (s *StatusManager) sync(ctx context.Context, e *statusEntry) error {
	pods := s.cfg.Client.CoreV1().Pods(e.pod.Namespace)
	if e.status != nil {
		inAPI := false
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			cur, err := pods.Get(ctx, e.pod.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if !s.owns(e.pod, cur) {
				if isAPIPod(e.pod) {
					return nil // replaced by another pod of the same name
				}
				return errMirrorMissing
			}
			st, ok := mergeStatus(cur.Status, *e.status)
			if !ok {
				s.log.Info("not moving a terminal pod back", "pod", e.pod.Namespace+"/"+e.pod.Name,
					"phase", cur.Status.Phase, "reported", e.status.Phase)
				return nil
			}
			if apiequality.Semantic.DeepEqual(cur.Status, st) {
				inAPI = true
				return nil
			}
			cur.Status = st
			_, err = pods.UpdateStatus(ctx, cur, metav1.UpdateOptions{})
			inAPI = err == nil
			return err
		})
		if inAPI && s.cfg.Written != nil {
			s.cfg.Written(e.pod, e.status)
		}
		switch {
		case apierrors.IsNotFound(err) && isAPIPod(e.pod):
			return nil // deleted meanwhile
		case apierrors.IsNotFound(err):
			return errMirrorMissing
		case err != nil:
			return fmt.Errorf("update status: %w", err)
		}
	}
	if e.confirm {
		return deletePod(ctx, s.cfg.Client, e.pod.Namespace, e.pod.Name, e.pod.UID)
	}
	return nil
}

// owns tells whether cur is the API object for pod: the pod itself, or
// for a static pod its mirror pod.
func (s *StatusManager) owns(pod, cur *v1.Pod) bool {
	if isAPIPod(pod) {
		return cur.UID == pod.UID
	}
	return isMirrorOf(cur, pod)
}

// deletePod deletes for good (grace 0) the pod with that UID, if present.
func deletePod(ctx context.Context, c kubernetes.Interface, ns, name string, uid types.UID) error {
	grace := int64(0)
	err := c.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{
		GracePeriodSeconds: &grace,
		Preconditions:      &metav1.Preconditions{UID: &uid},
	})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("delete pod %s/%s: %w", ns, name, err)
	}
	return nil // gone, or the name now belongs to another pod (UID precondition failed)
}

// mergeStatus returns the status to write; false when it would move a
// terminal pod (Succeeded or Failed) back to a non-terminal phase.
func mergeStatus(old, reported v1.PodStatus) (v1.PodStatus, bool) {
	if terminal(old.Phase) && !terminal(reported.Phase) {
		return old, false
	}
	st := *reported.DeepCopy()
	// As upstream's mergePodStatus: the kubelet's own conditions come from
	// the report, every other one from the API, even if the report has a
	// copy (its copy may be older than what its owner wrote since).
	st.Conditions = nil
	have := map[v1.PodConditionType]bool{}
	for _, c := range reported.Conditions {
		if podutil.IsKubeletCondition(c.Type) {
			st.Conditions = append(st.Conditions, *c.DeepCopy())
			have[c.Type] = true
		}
	}
	for _, c := range old.Conditions {
		if !have[c.Type] && (!podutil.IsKubeletCondition(c.Type) || c.Type == v1.PodScheduled) {
			st.Conditions = append(st.Conditions, c)
		}
	}
	// DisruptionTarget is shared with the kubelet: its own (a pod it
	// preempted) goes with the move to a terminal phase, replacing the API's.
	if !terminal(old.Phase) && terminal(reported.Phase) {
		if i := slices.IndexFunc(reported.Conditions, func(c v1.PodCondition) bool { return c.Type == v1.DisruptionTarget }); i >= 0 {
			st.Conditions = slices.DeleteFunc(st.Conditions, func(c v1.PodCondition) bool { return c.Type == v1.DisruptionTarget })
			st.Conditions = append(st.Conditions, *reported.Conditions[i].DeepCopy())
		}
	}
	if st.NominatedNodeName == "" {
		st.NominatedNodeName = old.NominatedNodeName
	}
	return st, true
}

func terminal(p v1.PodPhase) bool { return p == v1.PodSucceeded || p == v1.PodFailed }

// isAPIPod tells pods from the API from static pods (podutil.IsStatic is
// not its negation: a pod of neither source is neither).
func isAPIPod(pod *v1.Pod) bool {
	return pod.Annotations[podutil.ConfigSourceAnnotation] == podutil.SourceAPI
}
