package apiclient

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/workqueue"

	"github.com/nodeagent/nodeagent/pkg/podutil"
)

// errMirrorMissing: a static pod's status waits for its mirror pod.
var errMirrorMissing = errors.New("mirror pod not there yet")

// maxStatusAttempts bounds the patches of one update whose base turned out
// stale (a conflict): each retry reads the pod first.
const maxStatusAttempts = 5

// StatusConfig configures StatusManager; Client is required.
type StatusConfig struct {
	// Client sends the statuses. The agent gives it a rate limiter of its
	// own (Clients.Status), so statuses never wait behind its other requests.
	Client kubernetes.Interface
	Logger *slog.Logger
	// RetryBase and RetryMax bound the per-pod back-off after a failed
	// update (defaults 200ms and 30s).
	RetryBase, RetryMax time.Duration
	// Written, when set, hears of each status the API holds after an
	// update (written, or already there): the pod start trace's "status
	// reached the API".
	Written func(pod *v1.Pod, status *v1.PodStatus)
	// Workers bounds the updates in flight (default 4). One pod's updates
	// never run at the same time, so they reach the API in order.
	Workers int
	// Timeout bounds each API request (default 10s).
	Timeout time.Duration
}

// StatusManager sends the pod statuses the workers generate to the API
// (pods/status; for static pods, their mirror pod's) and confirms the
// deletion of API pods once the workers have stopped them. Updates of one
// pod are coalesced: the latest status wins. Each update is a strategic
// merge patch, as the kubelet's, computed against the copy of the pod the
// manager last read or wrote (else the pod the worker was given, which
// the agent's watch delivered), so no GET precedes it; the patch carries
// that copy's resourceVersion as a precondition, and only a conflict
// (someone else wrote the pod since) costs a GET and a second patch.
type StatusManager struct {
	cfg   StatusConfig
	log   *slog.Logger
	queue workqueue.TypedRateLimitingInterface[types.UID]

	mu      sync.Mutex
	pending map[types.UID]*statusEntry
	// known is, per pod, the API object (for a static pod its mirror) as
	// the manager last read or wrote it: metadata and status only.
	known map[types.UID]*v1.Pod
}

type statusEntry struct {
	pod     *v1.Pod
	status  *v1.PodStatus // nil: nothing to send
	confirm bool          // delete once the status is sent
	done    bool          // the worker is gone: forget the pod once sent
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
	if cfg.Workers <= 0 {
		cfg.Workers = 4
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	return &StatusManager{
		cfg: cfg,
		log: cfg.Logger.With("component", "statusmanager"),
		// Only failures are delayed: a new status is queued at once.
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[types.UID](cfg.RetryBase, cfg.RetryMax),
			workqueue.TypedRateLimitingQueueConfig[types.UID]{Name: "podstatus"}),
		pending: map[types.UID]*statusEntry{},
		known:   map[types.UID]*v1.Pod{},
	}, nil
}

// OnStatus is podworker.Config.OnStatus: it queues the status and returns.
func (s *StatusManager) OnStatus(pod *v1.Pod, status v1.PodStatus) {
	s.enqueue(pod, func(e *statusEntry) { e.status = status.DeepCopy() })
}

// OnTerminated is podworker.Config.OnTerminated: a deleted API pod is
// deleted for good (grace period 0, UID precondition) after its last
// status is sent. Static pods' mirrors go with them; other pods have left
// the API already, or stay there finished.
func (s *StatusManager) OnTerminated(pod *v1.Pod) {
	confirm := isAPIPod(pod) && pod.DeletionTimestamp != nil
	s.enqueue(pod, func(e *statusEntry) { e.confirm, e.done = e.confirm || confirm, true })
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

// Run sends queued updates with cfg.Workers goroutines until ctx ends.
func (s *StatusManager) Run(ctx context.Context) error {
	go func() {
		<-ctx.Done()
		s.queue.ShutDown()
	}()
	var wg sync.WaitGroup
	for range s.cfg.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for s.processNext(ctx) {
			}
		}()
	}
	wg.Wait()
	return nil
}

// processNext handles one queued pod; false once the queue shut down. The
// queue hands a pod to one worker at a time.
func (s *StatusManager) processNext(ctx context.Context) bool {
	uid, quit := s.queue.Get()
	if quit {
		return false
	}
	defer s.queue.Done(uid)
	s.process(ctx, uid)
	return true
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
		if cp.done {
			delete(s.known, uid)
		}
	}
	s.mu.Unlock()
}

// sync sends one entry: the status, then the deletion.
func (s *StatusManager) sync(ctx context.Context, e *statusEntry) error {
	if e.status != nil {
		inAPI, err := s.sendStatus(ctx, e.pod, *e.status)
		if inAPI && s.cfg.Written != nil {
			s.cfg.Written(e.pod, e.status)
		}
		switch {
		case apierrors.IsNotFound(err) && isAPIPod(e.pod):
			// deleted meanwhile
		case apierrors.IsNotFound(err):
			return errMirrorMissing
		case err != nil:
			return fmt.Errorf("update status: %w", err)
		}
	}
	if e.confirm {
		ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
		defer cancel()
		return deletePod(ctx, s.cfg.Client, e.pod.Namespace, e.pod.Name, e.pod.UID)
	}
	return nil
}

// sendStatus patches the pod's status against the best copy known, and
// on a conflict reads the pod and tries again.
func (s *StatusManager) sendStatus(ctx context.Context, pod *v1.Pod, status v1.PodStatus) (bool, error) {
	base := s.base(pod)
	for attempt := 1; ; attempt++ {
		if base == nil {
			cur, err := s.get(ctx, pod)
			if err != nil || cur == nil {
				return false, err // nil, nil: not this pod's object
			}
			base = cur
		}
		held, err := s.patch(ctx, pod, base, status)
		if !apierrors.IsConflict(err) || attempt == maxStatusAttempts {
			if err != nil {
				s.forgetKnown(pod.UID) // read afresh next time
			}
			return held, err
		}
		base = nil
	}
}

// base is the copy of the API object the next patch is computed against:
// the manager's own last read or write, else, for an API pod, the pod the
// worker was given. nil: read it first.
func (s *StatusManager) base(pod *v1.Pod) *v1.Pod {
	s.mu.Lock()
	defer s.mu.Unlock()
	if k := s.known[pod.UID]; k != nil {
		return k
	}
	if isAPIPod(pod) && pod.ResourceVersion != "" {
		return statusCopy(pod)
	}
	return nil
}

// get reads the API object for pod; nil, nil when the name now belongs to
// another pod.
func (s *StatusManager) get(ctx context.Context, pod *v1.Pod) (*v1.Pod, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	cur, err := s.cfg.Client.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	if !s.owns(pod, cur) {
		if isAPIPod(pod) {
			return nil, nil // replaced by another pod of the same name
		}
		return nil, errMirrorMissing
	}
	cur = statusCopy(cur)
	s.remember(pod.UID, cur)
	return cur, nil
}

// patch writes status, merged into base's, as a patch from base's status;
// nothing when that changes nothing or would move a terminal pod back. It
// reports whether the API then holds the status (written, or already there).
func (s *StatusManager) patch(ctx context.Context, pod, base *v1.Pod, status v1.PodStatus) (bool, error) {
	st, ok := mergeStatus(base.Status, status)
	if !ok {
		s.log.Info("not moving a terminal pod back", "pod", pod.Namespace+"/"+pod.Name,
			"phase", base.Status.Phase, "reported", status.Phase)
		return false, nil
	}
	body, unchanged, err := statusPatch(base, st)
	if err != nil || unchanged {
		return err == nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	out, err := s.cfg.Client.CoreV1().Pods(base.Namespace).Patch(ctx, base.Name, types.StrategicMergePatchType, body, metav1.PatchOptions{}, "status")
	if err != nil {
		return false, err
	}
	s.remember(pod.UID, statusCopy(out))
	return true, nil
}

func (s *StatusManager) remember(uid types.UID, p *v1.Pod) {
	s.mu.Lock()
	s.known[uid] = p
	s.mu.Unlock()
}

func (s *StatusManager) forgetKnown(uid types.UID) {
	s.mu.Lock()
	delete(s.known, uid)
	s.mu.Unlock()
}

// statusCopy keeps of p what a patch is computed from: its identity,
// resourceVersion and status (the spec stays out of the manager's memory).
func statusCopy(p *v1.Pod) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace, UID: p.UID, ResourceVersion: p.ResourceVersion},
		Status:     *p.Status.DeepCopy(),
	}
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

func terminal(p v1.PodPhase) bool { return p == v1.PodSucceeded || p == v1.PodFailed }

// isAPIPod tells pods from the API from static pods (podutil.IsStatic is
// not its negation: a pod of neither source is neither).
func isAPIPod(pod *v1.Pod) bool {
	return pod.Annotations[podutil.ConfigSourceAnnotation] == podutil.SourceAPI
}
