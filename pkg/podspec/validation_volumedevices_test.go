package podspec

import (
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
)

// volumeDevices as upstream's ValidateVolumeDevices and the overlap half of
// ValidateVolumeMounts check them, with upstream's messages.
func TestValidateVolumeDevices(t *testing.T) {
	claim := v1.Volume{Name: "disk", VolumeSource: v1.VolumeSource{
		PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "disk"}}}
	claim2 := v1.Volume{Name: "disk2", VolumeSource: v1.VolumeSource{
		PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "disk2"}}}
	eph := v1.Volume{Name: "scratch", VolumeSource: v1.VolumeSource{Ephemeral: &v1.EphemeralVolumeSource{}}}
	empty := v1.Volume{Name: "tmp", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}
	dev := func(name, path string) v1.VolumeDevice { return v1.VolumeDevice{Name: name, DevicePath: path} }
	with := func(vols []v1.Volume, mounts []v1.VolumeMount, devs ...v1.VolumeDevice) func(*v1.Pod) {
		return func(p *v1.Pod) {
			p.Spec.Volumes = append(p.Spec.Volumes, vols...)
			if mounts != nil {
				p.Spec.Containers[0].VolumeMounts = mounts
			}
			p.Spec.Containers[0].VolumeDevices = devs
		}
	}
	const vd = "spec.containers[0].volumeDevices"
	cases := []struct {
		name   string
		mutate func(*v1.Pod)
		want   []string // "<type>: <field>: <detail>"
	}{
		{"a claim as a device", with([]v1.Volume{claim}, nil, dev("disk", "/dev/xvda")), nil},
		{"an ephemeral volume as a device", with([]v1.Volume{eph}, nil, dev("scratch", "/dev/xvdb")), nil},
		{"a relative device path is not checked here", with([]v1.Volume{claim}, nil, dev("disk", "dev/xvda")), nil},
		{"no such volume", with(nil, nil, dev("nope", "/dev/xvda")),
			[]string{"Not found: " + vd + "[0].name: "}},
		{"an emptyDir is no block device", with([]v1.Volume{empty}, nil, dev("tmp", "/dev/xvda")),
			[]string{"Invalid value: " + vd + "[0].name: can only use volume source type of PersistentVolumeClaim or Ephemeral for block mode"}},
		{"no name and no path", with(nil, nil, dev("", "")),
			[]string{"Required value: " + vd + "[0].name: ", "Not found: " + vd + "[0].name: ",
				"Required value: " + vd + "[0].devicePath: "}},
		{"backsteps", with([]v1.Volume{claim}, nil, dev("disk", "/dev/../xvda")),
			[]string{"Invalid value: " + vd + "[0].devicePath: can not contain backsteps ('..')"}},
		{"dots in a name are no backsteps", with([]v1.Volume{claim}, nil, dev("disk", "/dev/..xvda")), nil},
		{"the same volume twice", with([]v1.Volume{claim}, nil, dev("disk", "/dev/xvda"), dev("disk", "/dev/xvdb")),
			[]string{"Invalid value: " + vd + "[1].name: must be unique"}},
		{"the same path twice", with([]v1.Volume{claim, claim2}, nil, dev("disk", "/dev/xvda"), dev("disk2", "/dev/xvda")),
			[]string{"Invalid value: " + vd + "[1].devicePath: must be unique"}},
		{"a path with backsteps is not counted for uniqueness", with([]v1.Volume{claim, claim2}, nil,
			dev("disk", "/a/../b"), dev("disk2", "/a/../b")),
			[]string{"Invalid value: " + vd + "[0].devicePath: can not contain backsteps ('..')",
				"Invalid value: " + vd + "[1].devicePath: can not contain backsteps ('..')"}},
		{"the same volume mounted and a device", with([]v1.Volume{claim}, []v1.VolumeMount{{Name: "disk", MountPath: "/data"}},
			dev("disk", "/dev/xvda")),
			[]string{"Invalid value: spec.containers[0].volumeMounts[0].name: must not already exist in volumeDevices",
				"Invalid value: " + vd + "[0].name: must not already exist in volumeMounts"}},
		{"a device at a mount's path", with([]v1.Volume{claim}, nil, dev("disk", "/data")),
			[]string{"Invalid value: spec.containers[0].volumeMounts[0].mountPath: must not already exist as a path in volumeDevices",
				"Invalid value: " + vd + "[0].devicePath: must not already exist as a path in volumeMounts"}},
		{"init and ephemeral containers are checked too", func(p *v1.Pod) {
			p.Spec.InitContainers = []v1.Container{{Name: "init", Image: "x",
				VolumeDevices: []v1.VolumeDevice{dev("nope", "/dev/xvda")}}}
			p.Spec.EphemeralContainers = []v1.EphemeralContainer{{EphemeralContainerCommon: v1.EphemeralContainerCommon{
				Name: "debug", Image: "x", VolumeDevices: []v1.VolumeDevice{dev("data", "/dev/xvda")}}}}
			SetDefaults(p)
		}, []string{"Not found: spec.initContainers[0].volumeDevices[0].name: ",
			"Forbidden: spec.ephemeralContainers: cannot be set on create",
			"Invalid value: spec.ephemeralContainers[0].volumeDevices[0].name: can only use volume source type of PersistentVolumeClaim or Ephemeral for block mode"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := basePod()
			tc.mutate(pod)
			got, want := errDetails(Validate(pod)), slices.Sorted(slices.Values(tc.want))
			if !slices.Equal(got, want) {
				t.Errorf("errors:\n  got  %q\n  want %q", got, want)
			}
		})
	}
}
