package eviction

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func u64(n int64) *uint64 { v := uint64(n); return &v }

func mi(n int64) int64 { return n << 20 }

// apiPod is a pod with one container of the given memory request and
// limit ("" for none).
func apiPod(name string, priority int32, request, limit string) *v1.Pod {
	res := v1.ResourceRequirements{Requests: v1.ResourceList{}, Limits: v1.ResourceList{}}
	if request != "" {
		res.Requests[v1.ResourceMemory] = resource.MustParse(request)
	}
	if limit != "" {
		res.Limits[v1.ResourceMemory] = resource.MustParse(limit)
	}
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name)},
		Spec: v1.PodSpec{
			Priority:   &priority,
			Containers: []v1.Container{{Name: name, Resources: res}},
		},
	}
}

// memPod is apiPod with its container's and pod's working set.
func memPod(name string, priority int32, request, limit string, usage int64) Pod {
	p := PodFromAPI(apiPod(name, priority, request, limit))
	p.Stats = &PodStats{
		MemoryWorkingSet: u64(usage),
		Containers:       []ContainerStats{{Name: name, MemoryWorkingSet: u64(usage)}},
	}
	return p
}

// diskPod: one container with rootfs and logs use, and an emptyDir
// "local" with volume use (all in bytes and, the same figures, inodes).
func diskPod(name string, priority int32, request string, rootfs, logs, volume int64) Pod {
	pod := apiPod(name, priority, "", "")
	if request != "" {
		pod.Spec.Containers[0].Resources.Requests[v1.ResourceEphemeralStorage] = resource.MustParse(request)
	}
	pod.Spec.Volumes = []v1.Volume{{Name: "local", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}}
	p := PodFromAPI(pod)
	use := func(n int64) *FsUsage { return &FsUsage{UsedBytes: u64(n), InodesUsed: u64(n)} }
	p.Stats = &PodStats{
		Containers: []ContainerStats{{Name: name, Rootfs: use(rootfs), Logs: use(logs)}},
		Volumes:    []VolumeStats{{Name: "local", FsUsage: *use(volume)}},
	}
	return p
}

func names(pods []*Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Name)
	}
	return out
}

func ptrs(pods []Pod) []*Pod {
	out := make([]*Pod, len(pods))
	for i := range pods {
		out[i] = &pods[i]
	}
	return out
}

func resourceMust(s string) resource.Quantity { return resource.MustParse(s) }
