package admission

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/nodeagent/nodeagent/pkg/controlplane/apiserver/internal/apitest"
)

func twoContainerPod() *v1.Pod {
	return &v1.Pod{Spec: v1.PodSpec{
		InitContainers: []v1.Container{{Name: "init", Image: "busybox:1"}},
		Containers:     []v1.Container{{Name: "c", Image: "busybox:1"}},
		EphemeralContainers: []v1.EphemeralContainer{{EphemeralContainerCommon: v1.EphemeralContainerCommon{
			Name: "debug", Image: "busybox:1"}}},
	}}
}

func TestMountServiceAccountToken(t *testing.T) {
	own := v1.VolumeMount{Name: "mine", MountPath: "/var/run/secrets/kubernetes.io/serviceaccount"}
	cases := []struct {
		name   string
		change func(*v1.Pod)
		want   func(*v1.Pod) // the expected pod, from the unchanged one
	}{
		{"every init and regular container, not ephemeral ones", func(*v1.Pod) {}, func(p *v1.Pod) {
			p.Spec.Volumes = []v1.Volume{apitest.WantTokenVolume("kube-api-access-abcde")}
			p.Spec.InitContainers[0].VolumeMounts = []v1.VolumeMount{apitest.TokenMount("kube-api-access-abcde")}
			p.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{apitest.TokenMount("kube-api-access-abcde")}
		}},
		{"a container with its own mount at the path keeps it", func(p *v1.Pod) {
			p.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{own}
		}, func(p *v1.Pod) {
			p.Spec.Volumes = []v1.Volume{apitest.WantTokenVolume("kube-api-access-abcde")}
			p.Spec.InitContainers[0].VolumeMounts = []v1.VolumeMount{apitest.TokenMount("kube-api-access-abcde")}
			p.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{own}
		}},
		{"no container needs it: no volume", func(p *v1.Pod) {
			p.Spec.InitContainers[0].VolumeMounts = []v1.VolumeMount{own}
			p.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{own}
		}, func(p *v1.Pod) {
			p.Spec.InitContainers[0].VolumeMounts = []v1.VolumeMount{own}
			p.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{own}
		}},
		{"an existing token volume is reused", func(p *v1.Pod) {
			p.Spec.Volumes = []v1.Volume{{Name: "kube-api-access-zzzzz", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}}
			p.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{apitest.TokenMount("kube-api-access-zzzzz")}
		}, func(p *v1.Pod) {
			p.Spec.Volumes = []v1.Volume{{Name: "kube-api-access-zzzzz", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}}
			p.Spec.InitContainers[0].VolumeMounts = []v1.VolumeMount{apitest.TokenMount("kube-api-access-zzzzz")}
			p.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{apitest.TokenMount("kube-api-access-zzzzz")}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, want := twoContainerPod(), twoContainerPod()
			tc.change(got)
			tc.want(want)
			mountServiceAccountToken(got, func() string { return "abcde" })
			apitest.SameJSON(t, "pod", want, got)
		})
	}
}

func TestShouldAutomount(t *testing.T) {
	cases := []struct {
		pod, sa *bool
		want    bool
	}{
		{nil, nil, true},
		{nil, ptr.To(false), false},
		{ptr.To(true), ptr.To(false), true},
		{ptr.To(false), ptr.To(true), false},
		{ptr.To(false), nil, false},
	}
	for _, tc := range cases {
		pod := &v1.Pod{Spec: v1.PodSpec{AutomountServiceAccountToken: tc.pod}}
		sa := &v1.ServiceAccount{AutomountServiceAccountToken: tc.sa}
		if got := shouldAutomount(sa, pod); got != tc.want {
			t.Errorf("pod %v, service account %v: %v, want %v", tc.pod, tc.sa, got, tc.want)
		}
	}
}
