package podworker

import (
	"errors"
	"os"
	"path/filepath"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodeagent/nodeagent/pkg/podworker/criconfig"
)

// cgroupMountRoot is where the host's cgroup hierarchies are mounted.
var cgroupMountRoot = "/sys/fs/cgroup"

// removePodCgroups deletes the pod-level cgroup directories the runtime
// created under the pod's cgroup parent (the kubelet's pod container
// manager does the same). The QoS class of a pod known only from the
// runtime is unknown, so every class's path is tried. Only empty cgroups
// can be removed, so a cgroup still in use is left alone.
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
