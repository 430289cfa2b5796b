package podworker

import (
	"context"
	"maps"

	v1 "k8s.io/api/core/v1"

	"github.com/nodeagent/nodeagent/pkg/volume"
)

// withImageVolumes pulls the images of the image volumes c mounts, as the
// kubelet's getImageVolumes does before it starts containers (pull policy,
// credentials and back-off as for container images; events and a failed
// pull's waiting reason go to c), and returns the pod's volumes with those
// added for the CRI to mount.
func (w *worker) withImageVolumes(ctx context.Context, pod *v1.Pod, c *v1.Container, t startTarget) (map[string]volume.Mounted, error) {
	var out map[string]volume.Mounted
	for _, vm := range c.VolumeMounts {
		src := imageSource(pod, vm.Name)
		if src == nil {
			continue
		}
		if _, done := out[vm.Name]; done {
			continue
		}
		pull := v1.Container{Name: c.Name, Image: src.Reference, ImagePullPolicy: src.PullPolicy}
		ref, err := w.d.puller.ensure(ctx, pod, &pull, t.sandbox, t.pullSecrets)
		if err != nil {
			return nil, err
		}
		if out == nil {
			out = maps.Clone(t.volumes)
			if out == nil {
				out = map[string]volume.Mounted{}
			}
		}
		out[vm.Name] = volume.Mounted{Image: ref, ImageReference: src.Reference, ReadOnly: true}
	}
	if out == nil {
		return t.volumes, nil
	}
	return out, nil
}

// imageSource is the image volume called name, or nil.
func imageSource(pod *v1.Pod, name string) *v1.ImageVolumeSource {
	for i := range pod.Spec.Volumes {
		if pod.Spec.Volumes[i].Name == name {
			return pod.Spec.Volumes[i].Image
		}
	}
	return nil
}
