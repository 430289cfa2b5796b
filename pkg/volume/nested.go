package volume

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// makeNestedMountpoints creates, in a data volume's directory, the
// directories on which other volumes are mounted below this one's mount
// path (a secret at /etc/app/tls inside a configMap at /etc/app): the
// runtime cannot create them in a read-only bind mount.
func makeNestedMountpoints(volName, dir string, pod *v1.Pod) error {
	nested, err := nestedMountpoints(volName, pod)
	if err != nil {
		return err
	}
	for _, rel := range nested {
		if err := os.MkdirAll(filepath.Join(dir, rel), 0o755); err != nil {
			return fmt.Errorf("unable to create nested volume mountpoints: %v", err)
		}
	}
	return nil
}

// nestedMountpoints lists, relative to the volume, the mount points
// directly below the volume's mount path in every container.
func nestedMountpoints(volName string, pod *v1.Pod) ([]string, error) {
	var out []string
	for _, mounts := range podVolumeMounts(pod) {
		rels, err := nestedIn(volName, mounts)
		if err != nil {
			return nil, err
		}
		out = append(out, rels...)
	}
	return out, nil
}

func podVolumeMounts(pod *v1.Pod) [][]v1.VolumeMount {
	var out [][]v1.VolumeMount
	for i := range pod.Spec.InitContainers {
		out = append(out, pod.Spec.InitContainers[i].VolumeMounts)
	}
	for i := range pod.Spec.Containers {
		out = append(out, pod.Spec.Containers[i].VolumeMounts)
	}
	for i := range pod.Spec.EphemeralContainers {
		out = append(out, pod.Spec.EphemeralContainers[i].VolumeMounts)
	}
	return out
}

// nestedIn handles one container. Only the first level below each mount
// of the volume counts: for /a/b and /a/b/c below /a, only b is made.
func nestedIn(volName string, mounts []v1.VolumeMount) ([]string, error) {
	var all, mine []string
	for _, m := range mounts {
		p := filepath.Clean(m.MountPath)
		all = append(all, p)
		if m.Name == volName {
			mine = append(mine, p)
		}
	}
	sort.Strings(all)
	var out []string
	for _, mp := range mine {
		if strings.HasPrefix(mp, ".."+string(os.PathSeparator)) {
			// A crafted mount path must not make us create directories
			// outside the volume.
			return nil, fmt.Errorf("invalid container mount point %v", mp)
		}
		prefix := mp + string(os.PathSeparator)
		prev := ""
		for _, other := range all {
			if !strings.HasPrefix(other, prefix) || (prev != "" && strings.HasPrefix(other, prev)) {
				continue
			}
			prev = other + string(os.PathSeparator)
			out = append(out, other[len(prefix):])
		}
	}
	return out, nil
}
