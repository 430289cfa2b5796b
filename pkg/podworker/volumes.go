package podworker

import (
	"context"
	"errors"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodeagent/nodeagent/pkg/podutil"
	"github.com/nodeagent/nodeagent/pkg/podworker/criconfig"
	"github.com/nodeagent/nodeagent/pkg/runtime"
	"github.com/nodeagent/nodeagent/pkg/volume"
)

// VolumeManager is what the workers need of pkg/volume's Manager.
type VolumeManager interface {
	SetUpPod(ctx context.Context, pod *v1.Pod, podIPs []string) (map[string]volume.Mounted, error)
	TearDownPod(uid types.UID) error
	CleanupOrphans(keep map[types.UID]bool) error
}

// podVolumes sets up the pod's volumes before a plan that creates its
// sandbox or starts a container runs, as the kubelet's SyncPod waits for
// them (WaitForAttachAndMount) before the runtime acts: volume set-up
// (config map and secret reads, token requests) then precedes the
// sandbox instead of following it, and a failing mount keeps the pod
// without a sandbox. Nil for a plan that starts nothing.
func (w *worker) podVolumes(ctx context.Context, pod *v1.Pod, st *runtime.PodStatus, plan Plan) (map[string]volume.Mounted, error) {
	if !mountsVolumes(plan) {
		return nil, nil
	}
	return w.setUpVolumes(w.traceVolumes(ctx, pod), pod, volumePodIPs(pod, w.d.node.IP, st, plan))
}

// mountsVolumes: the plan makes the sandbox or starts a container, which
// wait for the pod's volumes.
func mountsVolumes(p Plan) bool { return p.CreateSandbox || startsAny(p) }

// volumePodIPs are the pod IPs the downward API files see: the running
// sandbox's, none yet for a sandbox still to be made (API validation
// keeps status.podIP out of volumes; only env reads it, once the sandbox
// is there), the node's for a hostNetwork pod.
func volumePodIPs(pod *v1.Pod, nodeIP string, st *runtime.PodStatus, plan Plan) []string {
	var ips []string
	if sb := st.ActiveSandbox(); sb != nil && !plan.CreateSandbox {
		ips = sb.IPs
	}
	return criconfig.PodIPs(pod, nodeIP, ips)
}

// setUpVolumes sets the pod's volumes up (again: data volumes refresh) and
// reports each failure as the kubelet's FailedMount event.
func (w *worker) setUpVolumes(ctx context.Context, pod *v1.Pod, podIPs []string) (map[string]volume.Mounted, error) {
	if w.d.volumes == nil || len(pod.Spec.Volumes) == 0 {
		return nil, nil
	}
	if needsSharedRoot(pod) {
		if err := volume.MakeRShared(w.d.rootDir); err != nil {
			w.d.events.Eventf(pod, v1.EventTypeWarning, "FailedMount", "mount propagation: %v", err)
			return nil, err
		}
	}
	key, now := string(pod.UID), w.d.now()
	if w.d.mounts.IsInBackOffSinceUpdate(key, now) {
		return nil, &mountBackoff{w.d.mounts.Get(key)}
	}
	mounts, err := w.d.volumes.SetUpPod(ctx, pod, podIPs)
	if err == nil {
		w.d.mounts.Reset(key)
		return mounts, nil
	}
	w.d.mounts.Next(key, now)
	var se *volume.SetUpError
	if errors.As(err, &se) {
		for _, name := range se.Failed {
			w.d.events.Eventf(pod, v1.EventTypeWarning, "FailedMount", "%s", se.Messages[name])
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
		return max(w.d.mounts.Get(string(pod.UID)), 100*time.Millisecond)
	}
	var ne *networkNotReadyError
	if errors.As(err, &ne) {
		return networkRetryPeriod
	}
	return w.d.retryPeriod
}

// needsSharedRoot: some volume mount asks for propagation, which the
// runtime only grants from a shared mount.
func needsSharedRoot(pod *v1.Pod) bool {
	for _, c := range podutil.AllContainers(pod) {
		for _, vm := range c.VolumeMounts {
			if vm.MountPropagation != nil && *vm.MountPropagation != v1.MountPropagationNone {
				return true
			}
		}
	}
	return false
}
