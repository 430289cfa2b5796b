package volume

import (
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
)

func TestNestedMountpoints(t *testing.T) {
	pod := testPod()
	pod.Spec.Containers = []v1.Container{
		{Name: "a", VolumeMounts: []v1.VolumeMount{
			{Name: "cfg", MountPath: "/etc/app"},
			{Name: "tls", MountPath: "/etc/app/tls"},
			{Name: "deep", MountPath: "/etc/app/tls/ca"}, // below tls: not ours
			{Name: "other", MountPath: "/etc/application"},
		}},
		{Name: "b", VolumeMounts: []v1.VolumeMount{
			{Name: "cfg", MountPath: "/conf/"},
			{Name: "x", MountPath: "/conf/x/y"},
		}},
	}
	got, err := nestedMountpoints("cfg", pod)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, []string{"tls", "x/y"}) {
		t.Errorf("nested = %v, want [tls x/y]", got)
	}
	pod.Spec.Containers[0].VolumeMounts[0].MountPath = "../escape"
	if _, err := nestedMountpoints("cfg", pod); err == nil {
		t.Error("relative mount path escaping accepted")
	}
}
