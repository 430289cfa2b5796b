package eviction

import (
	"maps"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestEvictionMessage(t *testing.T) {
	hard100Mi, _ := Parse(Config{EvictionHard: map[string]string{"memory.available": "100Mi", "nodefs.available": "10%"}}, nil)
	obs := Observations{
		SignalMemoryAvailable: {Available: mi(50), Capacity: mi(4096)},
		SignalNodeFsAvailable: {Available: mi(500), Capacity: mi(10240)},
	}
	x := memPod("x", 0, "100Mi", "", mi(200))
	under := memPod("under", 0, "1Gi", "", mi(200))
	twoContainers := PodFromAPI(func() *v1.Pod {
		p := apiPod("two", 0, "10Mi", "")
		p.Spec.InitContainers = []v1.Container{{Name: "init", Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceMemory: resource.MustParse("1M")}}}}
		p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: "side"})
		return p
	}())
	twoContainers.Stats = &PodStats{Containers: []ContainerStats{
		{Name: "two", MemoryWorkingSet: u64(mi(20))}, {Name: "side", MemoryWorkingSet: u64(mi(1))}, {Name: "init", MemoryWorkingSet: u64(2e6)},
	}}
	disk := diskPod("d", 0, "1Mi", mi(2), mi(1), mi(100))
	cases := []struct {
		name string
		r    v1.ResourceName
		pod  Pod
		msg  string
		ann  map[string]string
	}{
		{
			name: "container over its request", r: v1.ResourceMemory, pod: x,
			msg: "The node was low on resource: memory. Threshold quantity: 100Mi, available: 50Mi. Container x was using 200Mi, request is 100Mi, has larger consumption of memory. ",
			ann: map[string]string{OffendingContainersKey: "x", OffendingContainersUsageKey: "200Mi", StarvedResourceKey: "memory"},
		},
		{
			name: "within its request", r: v1.ResourceMemory, pod: under,
			msg: "The node was low on resource: memory. Threshold quantity: 100Mi, available: 50Mi. ",
			ann: map[string]string{OffendingContainersKey: "", OffendingContainersUsageKey: "", StarvedResourceKey: "memory"},
		},
		{
			name: "containers without requests and init containers", r: v1.ResourceMemory, pod: twoContainers,
			msg: "The node was low on resource: memory. Threshold quantity: 100Mi, available: 50Mi. " +
				"Container two was using 20Mi, request is 10Mi, has larger consumption of memory. " +
				"Container side was using 1Mi, request is 0, has larger consumption of memory. " +
				"Container init was using 2000000, request is 1M, has larger consumption of memory. ",
			ann: map[string]string{OffendingContainersKey: "two,side,init", OffendingContainersUsageKey: "20Mi,1Mi,2000000", StarvedResourceKey: "memory"},
		},
		{
			name: "no stats", r: v1.ResourceMemory, pod: PodFromAPI(apiPod("y", 0, "", "")),
			msg: "The node was low on resource: memory. Threshold quantity: 100Mi, available: 50Mi. ", ann: map[string]string{},
		},
		{
			// 10% of 10Gi in the kubelet's float32 arithmetic, in bytes.
			name: "ephemeral storage: rootfs and logs, percentage threshold", r: v1.ResourceEphemeralStorage, pod: disk,
			msg: "The node was low on resource: ephemeral-storage. Threshold quantity: 1073741840, available: 500Mi. Container d was using 3Mi, request is 1Mi, has larger consumption of ephemeral-storage. ",
			ann: map[string]string{OffendingContainersKey: "d", OffendingContainersUsageKey: "3Mi", StarvedResourceKey: "ephemeral-storage"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			msg, ann := evictionMessage(tc.r, &tc.pod, hard100Mi, obs)
			if msg != tc.msg {
				t.Errorf("message\n%q\nwant\n%q", msg, tc.msg)
			}
			if !maps.Equal(ann, tc.ann) {
				t.Errorf("annotations %v, want %v", ann, tc.ann)
			}
		})
	}
}

func TestEvictionMessagePodLevelResources(t *testing.T) {
	pod := apiPod("p", 0, "", "")
	pod.Spec.Resources = &v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceMemory: resource.MustParse("100Mi")}}
	p := PodFromAPI(pod)
	p.Stats = &PodStats{MemoryWorkingSet: u64(mi(300)), Containers: []ContainerStats{{Name: "p", MemoryWorkingSet: u64(mi(300))}}}
	if p.MemoryRequest.String() != "100Mi" {
		t.Errorf("pod-level request %s", &p.MemoryRequest)
	}
	ts, _ := Parse(Config{EvictionHard: map[string]string{"memory.available": "100Mi"}}, nil)
	msg, ann := evictionMessage(v1.ResourceMemory, &p, ts, Observations{SignalMemoryAvailable: {Available: mi(10), Capacity: mi(1000)}})
	want := "The node was low on resource: memory. Threshold quantity: 100Mi, available: 10Mi. " +
		"Pod p was using 300Mi, request is 100Mi, has larger consumption of memory. " +
		"Container p was using 300Mi, request is 0, has larger consumption of memory. "
	if msg != want || ann[OffendingPodKey] != "p" || ann[OffendingPodUsageKey] != "300Mi" {
		t.Errorf("message %q (annotations %v)", msg, ann)
	}
}
