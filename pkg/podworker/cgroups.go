package podworker

import (
	"errors"
	"os"
	"path/filepath"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodeagent/nodeagent/pkg/podcgroup"
	"github.com/nodeagent/nodeagent/pkg/podworker/criconfig"
)

// cgroupMountRoot is where the host's cgroup hierarchies are mounted.
var cgroupMountRoot = "/sys/fs/cgroup"

// newPodCgroups is the pod cgroup manager, nil when the agent gives pods
// no cgroup parent or runs them flat under cgroupRoot (cgroupsPerQOS
// off): the kubelet's no-op pod container manager, which sets no pod
// limit either.
func newPodCgroups(cfg Config) *podcgroup.Manager {
	if cfg.CgroupRoot == "" || cfg.FlatCgroups {
		return nil
	}
	return podcgroup.NewManager(cgroupMountRoot, podcgroup.Options{
		PidsLimit: cfg.PodPidsLimit,
		// The QoS tiers follow the pods with cgroups (the kubelet's QoS
		// container manager); the agent made them, and kubepods, at start.
		QOS:           &podcgroup.QOSCgroups{Kubepods: podcgroup.KubepodsName(cfg.CgroupRoot)},
		HugePageSizes: podcgroup.Host{Proc: "/proc", Sys: "/sys"}.HugePageSizes(),
		Log:           cfg.Logger.With("component", "qos-cgroups"),
		Observe:       cfg.CgroupMetrics,
	})
}

// ensurePodCgroup creates the pod's cgroup, the sandbox's cgroup parent,
// with the pod's limits before the runtime puts anything in it (the
// kubelet's pcm.EnsureExists in SyncPod), and updates it when they change.
func (w *worker) ensurePodCgroup(pod *v1.Pod, parent string) error {
	if w.d.cgroups == nil || parent == "" {
		return nil
	}
	if err := w.d.cgroups.Ensure(parent, pod); err != nil {
		w.d.events.Eventf(pod, v1.EventTypeWarning, "FailedToCreatePodContainer", "unable to ensure pod container exists: %v", err)
		return err
	}
	return nil
}

// removePodCgroups deletes the pod-level cgroup directories under the
// pod's cgroup parent (the kubelet's pod container manager does the
// same). The QoS class of a pod known only from the runtime is unknown,
// so every class's path is tried. Only empty cgroups can be removed, so a
// cgroup still in use is left alone.
func (w *worker) removePodCgroups(uid types.UID) error {
	if w.d.node.FlatCgroups {
		return nil // no pod cgroups, and CgroupRoot is not the pod's
	}
	start := time.Now()
	err := removePodCgroups(w.d.node.CgroupRoot, uid)
	if w.d.cgroups != nil {
		w.d.cgroups.Observe(podcgroup.OpDestroy, time.Since(start))
	}
	if w.d.cgroups != nil && err == nil {
		for _, qos := range []v1.PodQOSClass{v1.PodQOSGuaranteed, v1.PodQOSBurstable, v1.PodQOSBestEffort} {
			w.d.cgroups.Forget(criconfig.PodCgroupParent(w.d.node.CgroupRoot, qos, uid))
		}
	}
	return err
}

func removePodCgroups(root string, uid types.UID) error {
	if root == "" {
		return nil
	}
	hierarchies, err := os.ReadDir(cgroupMountRoot)
	if err != nil {
		return nil // no cgroupfs to clean
	}
	var errs []error
	for _, qos := range []v1.PodQOSClass{v1.PodQOSGuaranteed, v1.PodQOSBurstable, v1.PodQOSBestEffort} {
		parent := criconfig.PodCgroupParent(root, qos, uid)
		// cgroup v2 has one hierarchy at the mount root.
		if err := os.Remove(filepath.Join(cgroupMountRoot, parent)); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
		for _, h := range hierarchies {
			if !h.IsDir() {
				continue // cgroup v2 control files live beside the hierarchy
			}
			dir := filepath.Join(cgroupMountRoot, h.Name(), parent)
			if err := os.Remove(dir); err != nil && !errors.Is(err, os.ErrNotExist) {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}
