package podworker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	criv1 "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodeagent/nodeagent/pkg/eviction"
	"github.com/nodeagent/nodeagent/pkg/logrotate"
	"github.com/nodeagent/nodeagent/pkg/runtime"
)

// runContainerGC collects garbage at once and then every
// ContainerGCPeriod until ctx ends, as the kubelet's container GC loop.
func (m *Manager) runContainerGC(ctx context.Context) {
	t := time.NewTicker(m.cfg.ContainerGCPeriod)
	defer t.Stop()
	for {
		if err := m.GarbageCollect(ctx, false); err != nil && ctx.Err() == nil {
			m.log.Warn("container garbage collection", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// CollectAllGarbage is the eviction manager's DeleteAllUnusedContainers:
// the container GC with evictNonDeletedPods, which also removes every
// dead container and sandbox of terminated pods not deleted yet.
func (m *Manager) CollectAllGarbage(ctx context.Context) error {
	return m.GarbageCollect(ctx, true)
}

// GarbageCollect is one container GC run: it reads the runtime's
// containers and sandboxes, the pod logs directory and the manager's
// pods, asks PlanGC what goes and removes it. evictNonDeleted also
// removes what terminated pods still hold.
func (m *Manager) GarbageCollect(ctx context.Context, evictNonDeleted bool) error {
	m.gcMu.Lock() // the periodic run and the eviction manager's
	defer m.gcMu.Unlock()
	in, err := m.gcInput(ctx)
	if err != nil {
		return err
	}
	in.EvictNonDeletedPods = evictNonDeleted
	m.mu.Lock()
	in.AllSourcesReady = m.sourcesReadyLocked()
	in.Pods = m.gcPodStateLocked
	plan := PlanGC(in)
	m.mu.Unlock()
	if plan.Empty() {
		return nil
	}
	m.log.Info("container garbage collection", "plan", plan.String())
	return m.executeGC(ctx, plan)
}

// gcInput lists what the runtime holds (objects of the kubelet's labels
// only) and the pod log directories.
func (m *Manager) gcInput(ctx context.Context) (GCInput, error) {
	in := GCInput{Policy: *m.cfg.ContainerGC, Now: m.now()}
	sandboxes, err := m.cfg.Runtime.ListPodSandbox(ctx, nil)
	if err != nil {
		return in, fmt.Errorf("list sandboxes: %w", err)
	}
	for _, sb := range sandboxes {
		ref, ok := runtime.PodRefFromLabels(sb.Labels)
		if !ok {
			continue
		}
		in.Sandboxes = append(in.Sandboxes, GCSandbox{
			ID: sb.Id, PodUID: ref.UID, Ready: sb.State == criv1.PodSandboxState_SANDBOX_READY, CreatedAt: time.Unix(0, sb.CreatedAt),
		})
	}
	containers, err := m.cfg.Runtime.ListContainers(ctx, nil)
	if err != nil {
		return in, fmt.Errorf("list containers: %w", err)
	}
	for _, c := range containers {
		ref, ok := runtime.PodRefFromLabels(c.Labels)
		if !ok {
			continue
		}
		in.Containers = append(in.Containers, GCContainer{
			ID: c.Id, SandboxID: c.PodSandboxId, PodUID: ref.UID, Name: c.GetMetadata().GetName(),
			Running:   c.State == criv1.ContainerState_CONTAINER_RUNNING,
			Unknown:   c.State == criv1.ContainerState_CONTAINER_UNKNOWN,
			CreatedAt: time.Unix(0, c.CreatedAt),
		})
	}
	if m.cfg.PodLogsDir != "" {
		entries, err := os.ReadDir(m.cfg.PodLogsDir)
		if err != nil && !os.IsNotExist(err) {
			return in, fmt.Errorf("read pod logs directory: %w", err)
		}
		for _, e := range entries {
			if e.IsDir() {
				in.LogDirs = append(in.LogDirs, e.Name())
			}
		}
	}
	return in, nil
}

// sourcesReadyLocked: the first pod set arrived and every source was
// heard from, so a pod not known is a deleted one.
func (m *Manager) sourcesReadyLocked() bool {
	return m.seeded && (m.cfg.SourcesReady == nil || m.cfg.SourcesReady())
}

// gcPodStateLocked is the kubelet's podStateProvider for one UID.
// A pod with a worker may lose its content only once that worker
// terminated it after a deletion, or stopped it for good after an
// eviction (upstream's ShouldPodContentBeRemoved: PodIsEvicted, or
// deleted and not running);
// a deleted pod already cleaned up, or one unknown once the sources are
// ready, loses everything.
func (m *Manager) gcPodStateLocked(uid types.UID) GCPodState {
	if w := m.workers[uid]; w != nil {
		w.mu.Lock()
		defer w.mu.Unlock()
		terminated := w.state == Terminated
		_, desired := m.desired[uid]
		deleted := w.orphan || !desired || w.pod.DeletionTimestamp != nil
		evicted := w.failReason == eviction.Reason || w.pod.Status.Phase == v1.PodFailed && w.pod.Status.Reason == eviction.Reason
		stopped := terminated || w.terminal
		return GCPodState{RemoveContent: deleted && terminated || evicted && stopped, RemoveRuntime: stopped}
	}
	if m.finished[uid] {
		return GCPodState{RemoveContent: true, RemoveRuntime: true}
	}
	if _, ok := m.desired[uid]; ok {
		return GCPodState{RemoveRuntime: true} // rejected at admission: nothing of it may run
	}
	ready := m.sourcesReadyLocked()
	return GCPodState{RemoveContent: ready, RemoveRuntime: ready}
}

// executeGC removes what the plan says: a sandbox whose containers could
// not all be removed stays for the next run.
func (m *Manager) executeGC(ctx context.Context, plan GCPlan) error {
	var errs []error
	failed := map[string]bool{}
	for _, c := range plan.Containers {
		if err := m.removeContainerByID(ctx, c); err != nil {
			errs = append(errs, fmt.Errorf("remove container %s of pod %s: %w", c.ID, c.PodUID, err))
			failed[c.SandboxID] = true
		}
	}
	for _, sb := range plan.Sandboxes {
		if failed[sb.ID] {
			continue
		}
		if err := removeSandbox(ctx, m.cfg.Runtime, sb.ID); err != nil {
			errs = append(errs, fmt.Errorf("remove sandbox %s of pod %s: %w", sb.ID, sb.PodUID, err))
		}
	}
	for _, d := range plan.LogDirs {
		if err := os.RemoveAll(filepath.Join(m.cfg.PodLogsDir, d)); err != nil {
			errs = append(errs, fmt.Errorf("remove pod logs directory: %w", err))
		}
	}
	return errors.Join(errs...)
}

// removeContainerByID reads the container's log path and termination
// message file, stops it when its state is unknown (as the kubelet's
// removeOldestN) and removes it with its files.
func (m *Manager) removeContainerByID(ctx context.Context, c GCContainer) error {
	resp, err := m.cfg.Runtime.ContainerStatus(ctx, c.ID, false)
	if runtime.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	s := resp.GetStatus()
	if c.Unknown {
		if err := m.cfg.Runtime.StopContainer(ctx, c.ID, 0); err != nil && !runtime.IsNotFound(err) {
			return fmt.Errorf("stop: %w", err)
		}
	}
	return removeContainer(ctx, m.cfg.Runtime, &runtime.ContainerStatus{
		ID: c.ID, LogPath: s.GetLogPath(), Mounts: s.GetMounts(),
		TerminationMessagePath: s.GetAnnotations()[runtime.AnnotationTerminationMessagePath],
	})
}

// removeContainer removes a container with its log files (rotated ones
// too) and its termination message file.
func removeContainer(ctx context.Context, rt runtime.Runtime, c *runtime.ContainerStatus) error {
	if err := rt.RemoveContainer(ctx, c.ID); err != nil && !runtime.IsNotFound(err) {
		return err
	}
	if c.LogPath != "" {
		_ = logrotate.RemoveLogs(c.LogPath) // with its rotated files
	}
	for _, mnt := range c.Mounts {
		if c.TerminationMessagePath != "" && mnt.ContainerPath == c.TerminationMessagePath {
			os.Remove(mnt.HostPath)
		}
	}
	return nil
}

// removeSandbox stops (in case the pod was not stopped: the kubelet's
// guard) and removes a sandbox.
func removeSandbox(ctx context.Context, rt runtime.Runtime, id string) error {
	if err := rt.StopPodSandbox(ctx, id); err != nil && !runtime.IsNotFound(err) {
		return fmt.Errorf("stop: %w", err)
	}
	if err := rt.RemovePodSandbox(ctx, id); err != nil && !runtime.IsNotFound(err) {
		return err
	}
	return nil
}

// collectGarbage is the container GC of one pod at the end of its sync:
// PlanGC over the pod's own containers and sandboxes, the pod existing,
// so that a restarting container keeps only its newest dead instance
// (`logs --previous`) without waiting for the node's next run.
func (w *worker) collectGarbage(ctx context.Context, st *runtime.PodStatus) {
	in := GCInput{Policy: w.d.gcPolicy, Now: w.d.now(), Pods: func(types.UID) GCPodState { return GCPodState{} }}
	in.Policy.MaxContainers = -1 // a node-wide limit is the node's run's
	for _, c := range st.Containers {
		in.Containers = append(in.Containers, GCContainer{
			ID: c.ID, SandboxID: c.SandboxID, PodUID: w.uid, Name: c.Name, CreatedAt: c.CreatedAt,
			Running: c.State == criv1.ContainerState_CONTAINER_RUNNING, Unknown: c.State == criv1.ContainerState_CONTAINER_UNKNOWN,
		})
	}
	for _, sb := range st.Sandboxes {
		in.Sandboxes = append(in.Sandboxes, GCSandbox{ID: sb.ID, PodUID: w.uid, Ready: sb.State == criv1.PodSandboxState_SANDBOX_READY, CreatedAt: sb.CreatedAt})
	}
	plan := PlanGC(in)
	byID := map[string]*runtime.ContainerStatus{}
	for _, c := range st.Containers {
		byID[c.ID] = c
	}
	failed := map[string]bool{}
	for _, c := range plan.Containers {
		if err := w.removeContainer(ctx, byID[c.ID]); err != nil {
			w.log.Warn("garbage-collect container", "container", c.Name, "err", err)
			failed[c.SandboxID] = true
		}
	}
	for _, sb := range plan.Sandboxes {
		if failed[sb.ID] {
			continue
		}
		if err := w.removeSandbox(ctx, sb.ID); err != nil {
			w.log.Warn("garbage-collect sandbox", "sandboxID", sb.ID, "err", err)
		}
	}
}
