package podutil

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestQOS(t *testing.T) {
	rl := func(cpu, mem string) v1.ResourceList {
		l := v1.ResourceList{}
		if cpu != "" {
			l[v1.ResourceCPU] = resource.MustParse(cpu)
		}
		if mem != "" {
			l[v1.ResourceMemory] = resource.MustParse(mem)
		}
		return l
	}
	guaranteed := v1.ResourceRequirements{Requests: rl("1", "1Gi"), Limits: rl("1", "1Gi")}
	burstable := v1.ResourceRequirements{Requests: rl("500m", "")}
	cases := []struct {
		name      string
		podLevel  *v1.ResourceRequirements
		container v1.ResourceRequirements
		status    v1.PodQOSClass
		compute   v1.PodQOSClass // what the API sets on create
		kubelet   v1.PodQOSClass // what the kubelet acts on
	}{
		{"containers decide", nil, guaranteed, "", v1.PodQOSGuaranteed, v1.PodQOSGuaranteed},
		{"pod-level guaranteed over best-effort containers", &guaranteed, v1.ResourceRequirements{}, "", v1.PodQOSGuaranteed, v1.PodQOSGuaranteed},
		{"pod-level burstable over guaranteed containers", &burstable, guaranteed, "", v1.PodQOSBurstable, v1.PodQOSBurstable},
		{"pod-level with only other resources: containers decide", &v1.ResourceRequirements{Requests: v1.ResourceList{"example.com/x": resource.MustParse("1")}}, guaranteed, "", v1.PodQOSGuaranteed, v1.PodQOSGuaranteed},
		{"the API's status wins on the node", nil, guaranteed, v1.PodQOSBurstable, v1.PodQOSGuaranteed, v1.PodQOSBurstable},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := &v1.Pod{Spec: v1.PodSpec{Resources: tc.podLevel, Containers: []v1.Container{{Name: "c", Resources: tc.container}}}}
			pod.Status.QOSClass = tc.status
			if got := ComputeQOS(pod); got != tc.compute {
				t.Errorf("ComputeQOS = %s, want %s", got, tc.compute)
			}
			if got := QOSClass(pod); got != tc.kubelet {
				t.Errorf("QOSClass = %s, want %s", got, tc.kubelet)
			}
		})
	}
}

func TestLimitDefaults(t *testing.T) {
	alloc := v1.ResourceList{v1.ResourceCPU: resource.MustParse("4"), v1.ResourceMemory: resource.MustParse("8Gi"), v1.ResourceEphemeralStorage: resource.MustParse("100Gi")}
	pod := &v1.Pod{}
	if got := LimitDefaults(pod, alloc); got.Memory().String() != "8Gi" {
		t.Errorf("without pod-level limits: memory %s, want the allocatable", got.Memory())
	}
	pod.Spec.Resources = &v1.ResourceRequirements{Limits: v1.ResourceList{v1.ResourceMemory: resource.MustParse("1Gi")}}
	got := LimitDefaults(pod, alloc)
	if got.Memory().String() != "1Gi" || got.Cpu().String() != "4" || got.StorageEphemeral().String() != "100Gi" {
		t.Errorf("with a pod-level memory limit: %v", got)
	}
	if alloc.Memory().String() != "8Gi" {
		t.Error("the allocatable was changed")
	}
}
