package podworker

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodeagent/nodeagent/pkg/podutil"
	"github.com/nodeagent/nodeagent/pkg/runtime"
)

// State is where a pod is in its life on this node.
type State int

const (
	// Syncing: the pod should run; each sync moves it toward its spec.
	Syncing State = iota
	// Terminating: the pod left the node's pod set; its containers are
	// being stopped.
	Terminating
	// Terminated: nothing of the pod runs any more.
	Terminated
)

func (s State) String() string {
	return [...]string{"Syncing", "Terminating", "Terminated"}[s]
}

// worker is the only goroutine that acts on one pod. Updates coalesce:
// the worker always syncs the latest spec it was given.
type worker struct {
	d      deps
	uid    types.UID
	log    *slog.Logger
	notify chan struct{}

	mu       sync.Mutex
	pod      *v1.Pod
	state    State
	status   *v1.PodStatus
	waiting  map[string]Waiting
	terminal bool // finished for good (Succeeded/Failed)
	// failReason and failMessage fail the pod whatever its containers do
	// (activeDeadlineSeconds passed, preempted), failCondition adds a
	// condition to that status (preempted: DisruptionTarget).
	failReason, failMessage string
	failCondition           *v1.PodCondition
	graceOverride           *int64 // an eviction's grace period (evict.go)
	// stopped is closed once nothing of a pod stopped for good runs.
	stopped   chan struct{}
	apiStatus bool // status is the API's, kept while nothing of the pod runs
	orphan    bool // known from the runtime only: no spec
	// fresh: the runtime held nothing of the pod when its worker started
	// (neverInRuntime), so its first sync need not ask.
	fresh bool
	// relist holds the last runtime read and the relist event that
	// woke the worker (relisted), which is news only if that read did
	// not see it.
	relist    relistState
	relisted  chan struct{}
	startTime time.Time
	synced    chan struct{} // closed after the first sync

	// For the metrics: why the next pass runs and since when, when the
	// agent first saw the pod, and whether its start is yet to be seen.
	op           string
	opSince      time.Time
	firstSeen    time.Time
	startPending bool

	cancelSync context.CancelFunc // interrupts the sync in progress

	// traced holds what the trace recorded once (first readiness, an
	// init container's exit).
	traced map[string]bool

	resize       resizeState // the allocated and actuated resources (in-place resize)
	allocatedPod *v1.Pod     // the pod with its allocation, for the other pods' resizes
}

func newWorker(d deps, pod *v1.Pod) *worker {
	w := &worker{
		d:        d,
		uid:      pod.UID,
		log:      d.log.With("pod", pod.Namespace+"/"+pod.Name, "podUID", pod.UID),
		notify:   make(chan struct{}, 1),
		relisted: make(chan struct{}, 1),
		pod:      pod,
		waiting:  map[string]Waiting{},
		synced:   make(chan struct{}),
		stopped:  make(chan struct{}),

		op: opCreate, opSince: d.now(), firstSeen: d.now(),
		// As upstream, only pods no kubelet started yet count as starts.
		startPending: pod.Status.StartTime == nil,
	}
	if finishedInAPI(pod) {
		// Seen for the first time but already finished (the agent restarted
		// after the pod completed or was rejected): it must never start
		// again, and its status stays the API's (kubernetes issue 105523).
		w.terminal, w.apiStatus, w.status = true, true, pod.Status.DeepCopy()
		w.log.Info("pod already finished in the API; not starting it", "phase", pod.Status.Phase)
	}
	return w
}

// finishedInAPI tells an API pod whose recorded phase is Succeeded or
// Failed. Static pods have no API phase: their manifest is the truth.
func finishedInAPI(pod *v1.Pod) bool {
	return !podutil.IsStatic(pod) && isTerminal(pod.Status.Phase)
}

// running tells whether anything of the pod still runs.
func running(st *runtime.PodStatus) bool {
	return st.ActiveSandbox() != nil || len(st.Running()) > 0
}

// wake asks for a sync without blocking; pending wake-ups coalesce.
func (w *worker) wake() {
	select {
	case w.notify <- struct{}{}:
	default:
	}
}

// update hands the worker a new copy of its pod and wakes it when the
// copy differs in what a pass acts on (podUpdated). A pod that finished
// for good and then changes is replaced, as the kubelet replaces a static
// pod whose manifest changed: stopped, cleaned up and started afresh.
func (w *worker) update(pod *v1.Pod) {
	w.mu.Lock()
	if sameAPIObject(w.pod, pod) {
		w.mu.Unlock()
		return
	}
	if w.terminal && w.state == Syncing && !apiequality.Semantic.DeepEqual(w.pod.Spec, pod.Spec) {
		w.state = Terminating
	}
	if !w.terminal && finishedInAPI(pod) {
		w.finishedElsewhereLocked(pod.Status)
	}
	updated := podUpdated(w.pod, pod)
	if updated {
		w.noteWorkLocked(opUpdate)
	}
	w.pod = pod // the next pass sees the latest status too
	w.mu.Unlock()
	if updated {
		w.wake()
	}
}

// finishedElsewhereLocked handles a pod that someone else marked
// Succeeded or Failed in the API: as the kubelet, the worker stops its
// containers and never restarts them, and its phase stays the API's.
func (w *worker) finishedElsewhereLocked(api v1.PodStatus) {
	w.terminal = true
	if w.status == nil {
		w.status, w.apiStatus = api.DeepCopy(), true
		return
	}
	st := w.status.DeepCopy() // readers may hold the old one
	st.Phase = api.Phase
	w.status = st
}

// terminate moves the worker to Terminating, interrupting a sync in
// progress; the worker then stops the pod and exits.
func (w *worker) terminate() {
	w.d.probes.StopLivenessAndStartup(w.uid) // a container being stopped is not killed again
	w.mu.Lock()
	if w.state == Syncing {
		w.state = Terminating
		w.noteWorkLocked(opKill)
	}
	if w.cancelSync != nil {
		w.cancelSync()
	}
	w.mu.Unlock()
	w.wake()
}

func (w *worker) snapshot() (*v1.Pod, State) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.pod, w.state
}

func (w *worker) setWaiting(name string, wt Waiting) {
	w.mu.Lock()
	w.waiting[name] = wt
	w.mu.Unlock()
}

func (w *worker) clearWaiting(name string) {
	w.mu.Lock()
	delete(w.waiting, name)
	w.mu.Unlock()
}

// Status returns the latest generated status, or nil before the first sync.
func (w *worker) Status() *v1.PodStatus {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.status
}

func (w *worker) run(ctx context.Context) {
	timer := time.NewTimer(0)
	defer timer.Stop()
	defer w.markSynced() // a pod removed before its first sync must not hold up readiness
	for {
		select {
		case <-ctx.Done():
			return // agent shutdown: leave the pod running
		case <-w.notify:
		case <-w.relisted:
			if !w.relistNews() {
				continue
			}
		case <-timer.C:
		}
		pod, state := w.snapshot()
		op, since := w.takeWork()
		if state != Syncing {
			w.stopAndClean(ctx, pod)
			w.d.metrics.PodWorkerDuration(opKill, w.d.now().Sub(since))
			return
		}
		next := w.syncCancellable(ctx, pod)
		w.d.metrics.PodWorkerDuration(op, w.d.now().Sub(since))
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
		timer.Reset(next)
	}
}

// syncCancellable runs one sync that terminate() can interrupt, so that a
// removed pod does not wait for a long image pull before it is stopped.
func (w *worker) syncCancellable(ctx context.Context, pod *v1.Pod) time.Duration {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w.mu.Lock()
	w.cancelSync = cancel
	w.mu.Unlock()
	defer func() {
		w.mu.Lock()
		w.cancelSync = nil
		w.mu.Unlock()
	}()
	return w.sync(ctx, pod)
}

// sync runs one pass and returns when the next one is due at the latest.
func (w *worker) sync(ctx context.Context, pod *v1.Pod) time.Duration {
	defer w.markSynced()
	ref := runtime.PodRef{UID: pod.UID, Name: pod.Name, Namespace: pod.Namespace}
	st, err := w.runtimeStatus(ctx, ref)
	if err != nil {
		w.log.Error("read pod status from runtime", "err", err)
		return w.d.retryPeriod
	}
	w.mu.Lock()
	if w.startTime.IsZero() {
		w.startTime = w.d.now()
		if running(st) {
			w.startPending = false // already running when first seen (agent restart): not a start
		}
	}
	terminal := w.terminal
	w.mu.Unlock()
	var execErr error
	switch {
	case terminal && running(st):
		// A finished pod whose stop failed earlier, or one the API shows
		// finished while it still runs (the agent was down while it was
		// being stopped): stop it, and report what was stopped.
		w.dropAPIStatus()
		if execErr = w.killPod(ctx, pod, st, w.stopGrace(pod)); execErr == nil {
			w.releaseUserNamespace()
			w.markStopped()
		}
		if st, err = w.readRuntime(ctx, ref); err != nil {
			w.log.Error("read pod status from runtime", "err", err)
			return w.d.retryPeriod
		}
	case !terminal && !w.checkDeadline(pod):
		w.registerObjects(pod)
		w.d.probes.AddPod(pod)
		if execErr = w.waitForNetwork(pod); execErr != nil {
			break
		}
		// Read on every sync, as the kubelet's SyncPod does, so a missing
		// secret is reported while the pod lives.
		pullSecrets := w.pullSecrets(ctx, pod)
		// The node runs the pod with the resources it admitted.
		allocated, resize := w.syncResize(pod, st)
		plan := withResizeRestarts(allocated, st, w.d.backoff, ComputePodActions(allocated, st, w.d.backoff, w.d.probes), resize)
		if !resize.Empty() {
			w.log.Info("resize", "plan", resize.String())
			execErr = w.resizeInPlace(ctx, allocated, resize)
		}
		if plan.Empty() {
			w.refreshVolumes(ctx, pod, st)
			break
		}
		w.log.Info("sync", "plan", plan.String())
		// As the kubelet's SyncPod (WaitForAttachAndMount before the
		// runtime's SyncPod): the volumes first, and neither sandbox nor
		// container while one fails.
		mounts, volErr := w.podVolumes(ctx, pod, st, plan)
		if volErr != nil {
			execErr = errors.Join(execErr, volErr) // containers wait for their volumes (ContainerCreating)
			break
		}
		execErr = errors.Join(execErr, w.execute(ctx, allocated, st, plan, pullSecrets, mounts))
		if st, err = w.readRuntime(ctx, ref); err != nil {
			w.log.Error("read pod status from runtime", "err", err)
			return w.d.retryPeriod
		}
		if !ComputePodActions(allocated, st, w.d.backoff, w.d.probes).Empty() {
			// More to do on what the read saw (an init container that
			// finished, a container that exited at once): the next
			// relist's event must wake the sync that does it.
			w.forgetSeen()
		}
	}
	status := w.generateStatus(pod, st)
	if isTerminal(status.Phase) && !terminal && w.finish(ctx, pod, st) {
		// As the kubelet's SyncTerminatingPod, the status after the stop
		// shows the containers terminated, without waiting for a resync.
		if st, err = w.readRuntime(ctx, ref); err != nil {
			w.log.Error("read pod status from runtime", "err", err)
			return w.d.retryPeriod
		}
		w.generateStatus(pod, st)
	}
	w.collectGarbage(ctx, st)
	if execErr != nil {
		retry := w.retryDelay(pod, execErr)
		w.log.Error("sync failed; retrying", "err", execErr, "retryIn", retry)
		return retry
	}
	return w.nextSync(pod, st)
}

// runtimeStatus reads the pod's runtime state, except on the first sync
// of a fresh pod: that one is empty at once, as the kubelet's pod cache
// answers for a pod its PLEG never saw, which spares a new pod's start
// the runtime's list calls.
func (w *worker) runtimeStatus(ctx context.Context, ref runtime.PodRef) (*runtime.PodStatus, error) {
	w.mu.Lock()
	fresh := w.fresh
	w.fresh = false
	w.mu.Unlock()
	if fresh {
		return &runtime.PodStatus{Ref: ref}, nil
	}
	return w.readRuntime(ctx, ref)
}

func (w *worker) markSynced() {
	select {
	case <-w.synced:
	default:
		close(w.synced)
	}
}

// reportFinalStatus publishes the stopped pod's status (containers
// terminated, with exit codes) before its containers are removed.
func (w *worker) reportFinalStatus(ctx context.Context, pod *v1.Pod, ref runtime.PodRef) {
	st, err := w.readRuntime(ctx, ref)
	if err != nil {
		w.log.Warn("final status", "err", err)
		return
	}
	w.mu.Lock()
	w.terminal = true // stopped for good: no restarts are pending
	w.mu.Unlock()
	w.generateStatus(pod, st)
}

func (w *worker) generateStatus(pod *v1.Pod, st *runtime.PodStatus) v1.PodStatus {
	if kept := w.keptAPIStatus(); kept != nil {
		return *kept
	}
	status := w.computeStatus(pod, st)
	if status.changed {
		w.traceStatus(pod, st, &status.PodStatus)
	}
	if status.started {
		w.d.metrics.PodStarted(pod, w.firstSeen, w.d.now())
	}
	if w.d.onStatus != nil && status.changed {
		w.d.onStatus(pod, status.PodStatus)
	}
	return status.PodStatus
}

// keptAPIStatus is the API's status while the worker has had nothing to
// do for a pod that was already finished: regenerating it from a runtime
// whose containers were removed would turn it into a Pending one.
func (w *worker) keptAPIStatus() *v1.PodStatus {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.apiStatus {
		return nil
	}
	return w.status.DeepCopy()
}

// dropAPIStatus: the worker stops something, so from now on it reports
// what it sees (the phase stays the API's: a terminal pod never comes back).
func (w *worker) dropAPIStatus() {
	w.mu.Lock()
	w.apiStatus = false
	w.mu.Unlock()
}

type generatedStatus struct {
	v1.PodStatus
	changed bool
	started bool // all containers run for the first time
}

func (w *worker) computeStatus(pod *v1.Pod, st *runtime.PodStatus) generatedStatus {
	w.mu.Lock()
	defer w.mu.Unlock()
	waiting := make(map[string]Waiting, len(w.waiting))
	for k, v := range w.waiting {
		waiting[k] = v
	}
	status := GenerateStatus(StatusInput{
		Pod: pod, Runtime: st, Old: w.status, Waiting: waiting,
		HostIP: w.d.node.IP, RuntimeName: w.d.runtimeName, StartTime: w.startTime, Now: w.d.now(),
		Terminal: w.terminal, TermMessage: readTerminationMessage,
		Probes: w.d.probes.UpdatePodStatus, Results: w.d.probes,
	})
	w.applyFailureLocked(&status)
	w.applyResizeStatus(pod, st, &status, w.status)
	changed := w.status == nil || !apiequality.Semantic.DeepEqual(*w.status, status)
	started := w.startPending && status.Phase == v1.PodRunning && containersStarted(&status)
	if started {
		w.startPending = false
	}
	w.status = &status
	return generatedStatus{status, changed, started}
}

// finish records that the pod completed for good and makes sure its
// sandbox is stopped; the containers stay for their logs. It reports
// whether the pod was stopped.
func (w *worker) finish(ctx context.Context, pod *v1.Pod, st *runtime.PodStatus) bool {
	w.mu.Lock()
	w.terminal = true
	w.mu.Unlock()
	w.d.probes.RemovePod(w.uid)
	w.log.Info("pod finished", "phase", w.Status().Phase)
	if err := w.killPod(ctx, pod, st, w.stopGrace(pod)); err != nil {
		w.log.Error("stop finished pod", "err", err)
		return false
	}
	w.releaseEvictedVolumes(pod)
	w.markStopped()
	w.releaseUserNamespace() // as the kubelet's SyncTerminatedPod
	w.unregisterObjects(pod)
	return true
}

// nextSync is the periodic resync, or sooner when a back-off ends.
func (w *worker) nextSync(pod *v1.Pod, st *runtime.PodStatus) time.Duration {
	next := w.d.resyncPeriod
	w.mu.Lock()
	defer w.mu.Unlock()
	if left, ok := untilDeadline(pod, w.startTime, w.d.now()); ok && !w.terminal && left < next {
		next = max(left, 0)
	}
	for name, wt := range w.waiting {
		var d time.Duration
		switch wt.Reason {
		case "CrashLoopBackOff":
			c := podutil.FindContainer(pod, name)
			cs := lastExited(st, name, "")
			if c == nil || cs == nil {
				continue
			}
			d = cs.FinishedAt.Add(w.d.backoff.Get(backoffKey(pod, c))).Sub(w.d.now())
		case ReasonErrImagePull, ReasonImagePullBackOff:
			if c := podutil.FindContainer(pod, name); c != nil {
				d = w.d.puller.pullBackoff(pod, c)
			}
		default:
			d = w.d.retryPeriod
		}
		if d < 100*time.Millisecond {
			d = 100 * time.Millisecond
		}
		if d < next {
			next = d
		}
	}
	return next
}

// stopAndClean stops a pod that left the node, then removes its runtime
// objects, logs and files.
func (w *worker) stopAndClean(ctx context.Context, pod *v1.Pod) {
	ref := runtime.PodRef{UID: pod.UID, Name: pod.Name, Namespace: pod.Namespace}
	defer w.d.forget(ctx, w)
	for attempt := 0; ; attempt++ {
		err := w.stopAndCleanOnce(ctx, pod, ref)
		if err == nil {
			break
		}
		w.log.Error("terminate pod", "err", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(w.d.retryPeriod):
		}
	}
	w.mu.Lock()
	w.state = Terminated
	w.mu.Unlock()
	w.markStopped()
	w.log.Info("pod terminated and cleaned up")
	if w.d.onTerminated != nil && !w.orphan {
		w.d.onTerminated(pod)
	}
}

func (w *worker) stopAndCleanOnce(ctx context.Context, pod *v1.Pod, ref runtime.PodRef) error {
	st, err := w.readRuntime(ctx, ref)
	if err != nil {
		return err
	}
	grace := gracePeriod(pod)
	if w.orphan {
		grace = recordedGracePeriod(st)
	}
	if running(st) {
		w.dropAPIStatus()
	}
	if err := w.killPod(ctx, pod, st, grace); err != nil {
		return err
	}
	if !w.orphan {
		w.reportFinalStatus(ctx, pod, ref)
	}
	var errs []error
	for _, c := range st.Containers {
		if err := w.removeContainer(ctx, c); err != nil {
			errs = append(errs, err)
		}
	}
	for _, sb := range st.Sandboxes {
		if err := w.removeSandbox(ctx, sb.ID); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	if err := w.removePodCgroups(pod.UID); err != nil {
		w.log.Warn("remove pod cgroups", "err", err) // not worth blocking the cleanup for
	}
	if w.d.volumes != nil {
		if err := w.d.volumes.TearDownPod(pod.UID); err != nil {
			return err // never remove the pod dir over a mounted volume
		}
	}
	logDir := runtime.PodLogsDir(w.d.node.PodLogsDir, pod.Namespace, pod.Name, pod.UID)
	if err := errors.Join(os.RemoveAll(logDir), os.RemoveAll(w.podDir())); err != nil {
		return err
	}
	w.releaseUserNamespace()
	w.unregisterObjects(pod)
	return nil
}

// recordedGracePeriod is the longest grace period recorded on the pod's
// containers (the kubelet's annotation), for a pod whose spec is gone.
func recordedGracePeriod(st *runtime.PodStatus) int64 {
	g := int64(-1)
	for _, c := range st.Containers {
		g = max(g, c.GracePeriod)
	}
	if g < 0 {
		return int64(v1.DefaultTerminationGracePeriodSeconds)
	}
	return max(g, minGracePeriod)
}

// removeSandbox removes a sandbox of the worker's pod.
func (w *worker) removeSandbox(ctx context.Context, id string) error {
	if err := w.d.runtime.RemovePodSandbox(ctx, id); err != nil && !runtime.IsNotFound(err) {
		return err
	}
	return nil
}

// removeContainer removes a container of the worker's pod with its files.
func (w *worker) removeContainer(ctx context.Context, c *runtime.ContainerStatus) error {
	return removeContainer(ctx, w.d.runtime, c)
}
