package criconfig

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	criv1 "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodeagent/nodeagent/pkg/volume"
)

// volumeMounts turns the container's volumeMounts into CRI mounts: the
// volume's host path (and subPath within it), read-only when the mount or
// the volume says so, with the requested propagation.
func volumeMounts(pod *v1.Pod, c *v1.Container, mounts map[string]volume.Mounted, env map[string]string) ([]*criv1.Mount, error) {
	var out []*criv1.Mount
	for _, vm := range c.VolumeMounts {
		m, ok := mounts[vm.Name]
		if !ok {
			return nil, &ConfigError{fmt.Sprintf("cannot find volume %q to mount into container %q", vm.Name, c.Name)}
		}
		host := m.HostPath
		sub := vm.SubPath
		if vm.SubPathExpr != "" {
			var err error
			if sub, err = volume.ExpandSubPathExpr(vm.SubPathExpr, env); err != nil {
				return nil, &ConfigError{fmt.Sprintf("failed to prepare subPath for volumeMount %q of container %q: %v", vm.Name, c.Name, err)}
			}
		}
		if m.Image != "" {
			// An image volume (KEP-4639): the runtime mounts the image
			// read-only; a runtime without support (containerd 1.6) fails
			// the container's creation, as with the kubelet.
			out = append(out, &criv1.Mount{
				ContainerPath: vm.MountPath, Readonly: true, Propagation: propagation(vm.MountPropagation),
				Image: &criv1.ImageSpec{Image: m.Image, UserSpecifiedImage: m.ImageReference}, ImageSubPath: sub,
			})
			continue
		}
		if sub != "" {
			var err error
			if host, err = volume.SubPath(m.HostPath, sub); err != nil {
				return nil, &ConfigError{fmt.Sprintf("failed to prepare subPath for volumeMount %q of container %q: %v", vm.Name, c.Name, err)}
			}
		}
		out = append(out, &criv1.Mount{
			ContainerPath: vm.MountPath, HostPath: host,
			Readonly: vm.ReadOnly || m.ReadOnly, Propagation: propagation(vm.MountPropagation),
			SelinuxRelabel: m.SELinuxRelabel,
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
