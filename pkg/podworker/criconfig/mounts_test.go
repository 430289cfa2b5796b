package criconfig

import (
	"testing"

	"google.golang.org/protobuf/proto"
	v1 "k8s.io/api/core/v1"
	criv1 "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodeagent/nodeagent/pkg/volume"
)

// An image volume becomes a CRI image mount, always read-only, its subPath
// the mount's imageSubPath; a host volume stays a bind of its host path.
func TestVolumeMountsImageVolume(t *testing.T) {
	pod := &v1.Pod{}
	c := &v1.Container{Name: "c", VolumeMounts: []v1.VolumeMount{
		{Name: "img", MountPath: "/img"},
		{Name: "img", MountPath: "/bin-only", SubPath: "bin"},
		{Name: "data", MountPath: "/data"},
	}}
	mounts := map[string]volume.Mounted{
		"img":  {Image: "sha256:abc", ImageReference: "example.com/tools:1", ReadOnly: true},
		"data": {HostPath: "/var/lib/x/data"},
	}
	got, err := volumeMounts(pod, c, mounts, nil)
	if err != nil {
		t.Fatal(err)
	}
	image := &criv1.ImageSpec{Image: "sha256:abc", UserSpecifiedImage: "example.com/tools:1"}
	want := []*criv1.Mount{
		{ContainerPath: "/img", Readonly: true, Image: image},
		{ContainerPath: "/bin-only", Readonly: true, Image: image, ImageSubPath: "bin"},
		{ContainerPath: "/data", HostPath: "/var/lib/x/data"},
	}
	if len(got) != len(want) {
		t.Fatalf("mounts = %v", got)
	}
	for i := range want {
		if !proto.Equal(got[i], want[i]) {
			t.Errorf("mount %d = %v, want %v", i, got[i], want[i])
		}
	}
}
