package podworker

import (
	"context"
	"errors"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	criv1 "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodeagent/nodeagent/pkg/volume"
)

// VolumeManager is what the workers need of pkg/volume's Manager.
type VolumeManager interface {
	SetUpPod(ctx context.Context, pod *v1.Pod, podIPs []string) (map[string]volume.Mounted, error)
	TearDownPod(uid types.UID) error
	CleanupOrphans(keep map[types.UID]bool) error
}

// setUpVolumes sets the pod's volumes up (again: data volumes refresh) and
// reports each failure as the kubelet's FailedMount event.
func (w *worker) setUpVolumes(ctx context.Context, pod *v1.Pod, podIPs []string) (map[string]volume.Mounted, error) {
	if w.m.cfg.Volumes == nil || len(pod.Spec.Volumes) == 0 {
		return nil, nil
	}
	if needsSharedRoot(pod) {
		if err := volume.MakeRShared(w.m.cfg.RootDir); err != nil {
			w.m.events.Eventf(pod, v1.EventTypeWarning, "FailedMount", "mount propagation: %v", err)
			return nil, err
		}
	}
	key, now := string(pod.UID), w.m.now()
	if w.m.mounts.IsInBackOffSinceUpdate(key, now) {
		return nil, &mountBackoff{w.m.mounts.Get(key)}
	}
	mounts, err := w.m.cfg.Volumes.SetUpPod(ctx, pod, podIPs)
	if err == nil {
		w.m.mounts.Reset(key)
		return mounts, nil
	}
	w.m.mounts.Next(key, now)
	var se *volume.SetUpError
	if errors.As(err, &se) {
		for _, name := range se.Failed {
			w.m.events.Eventf(pod, v1.EventTypeWarning, "FailedMount", "%s", se.Messages[name])
		}
		return mounts, fmt.Errorf("unmounted volumes=%v: %w", se.Failed, err)
	}
	return mounts, err
}

// mountBackoff: the pod's last volume set-up failed and its retry is not
// due yet.
type mountBackoff struct{ wait time.Duration }

func (e *mountBackoff) Error() string {
	return fmt.Sprintf("volume set-up failed recently; retrying within %s", e.wait)
}

// retryDelay is when a sync that failed should run again: after the
// volume back-off when volumes failed, else the retry period.
func (w *worker) retryDelay(pod *v1.Pod, err error) time.Duration {
	var mb *mountBackoff
	var se *volume.SetUpError
	if errors.As(err, &mb) || errors.As(err, &se) {
		return max(w.m.mounts.Get(string(pod.UID)), 100*time.Millisecond)
	}
	return w.m.cfg.RetryPeriod
}

// volumeMounts turns the container's volumeMounts into CRI mounts: the
// volume's host path (and subPath within it), read-only when the mount or
// the volume says so, with the requested propagation.
func volumeMounts(pod *v1.Pod, c *v1.Container, mounts map[string]volume.Mounted, env map[string]string) ([]*criv1.Mount, error) {
	var out []*criv1.Mount
	for _, vm := range c.VolumeMounts {
		m, ok := mounts[vm.Name]
		if !ok {
			return nil, &configError{fmt.Sprintf("cannot find volume %q to mount into container %q", vm.Name, c.Name)}
		}
		host := m.HostPath
		sub := vm.SubPath
		if vm.SubPathExpr != "" {
			var err error
			if sub, err = volume.ExpandSubPathExpr(vm.SubPathExpr, env); err != nil {
				return nil, &configError{fmt.Sprintf("failed to prepare subPath for volumeMount %q of container %q: %v", vm.Name, c.Name, err)}
			}
		}
		if sub != "" {
			var err error
			if host, err = volume.SubPath(m.HostPath, sub); err != nil {
				return nil, &configError{fmt.Sprintf("failed to prepare subPath for volumeMount %q of container %q: %v", vm.Name, c.Name, err)}
			}
		}
		out = append(out, &criv1.Mount{
			ContainerPath: vm.MountPath, HostPath: host,
			Readonly: vm.ReadOnly || m.ReadOnly, Propagation: propagation(vm.MountPropagation),
		})
	}
	return out, nil
}

func propagation(p *v1.MountPropagationMode) criv1.MountPropagation {
	switch {
	case p == nil:
		return criv1.MountPropagation_PROPAGATION_PRIVATE
	case *p == v1.MountPropagationHostToContainer:
		return criv1.MountPropagation_PROPAGATION_HOST_TO_CONTAINER
	case *p == v1.MountPropagationBidirectional:
		return criv1.MountPropagation_PROPAGATION_BIDIRECTIONAL
	}
	return criv1.MountPropagation_PROPAGATION_PRIVATE
}

// needsSharedRoot: some volume mount asks for propagation, which the
// runtime only grants from a shared mount.
func needsSharedRoot(pod *v1.Pod) bool {
	for _, c := range allContainers(pod) {
		for _, vm := range c.VolumeMounts {
			if vm.MountPropagation != nil && *vm.MountPropagation != v1.MountPropagationNone {
				return true
			}
		}
	}
	return false
}
