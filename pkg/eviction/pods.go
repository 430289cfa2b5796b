package eviction

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/nodeagent/nodeagent/pkg/podutil"
)

// Pod is what ranking, messages and local storage limits need of an
// active pod: its spec's figures (PodFromAPI) and its usage (Stats).
type Pod struct {
	UID             types.UID
	Namespace, Name string
	Generation      int64
	QOS             v1.PodQOSClass
	Priority        int32
	// Critical pods (static, mirror, priority >= system-cluster-critical's
	// 2000000000) are never evicted, as the kubelet's IsCriticalPod.
	Critical bool
	// TerminationGracePeriodSeconds caps a soft eviction's grace.
	TerminationGracePeriodSeconds *int64
	// MemoryRequest and EphemeralStorageRequest are the pod's effective
	// requests (containers, init containers, overhead, pod-level).
	MemoryRequest, EphemeralStorageRequest resource.Quantity
	// PodLevelMemoryRequest is spec.resources.requests.memory when the
	// pod sets pod-level resources.
	PodLevelMemoryRequest *resource.Quantity
	// Containers: regular, then init containers, in spec order.
	Containers []Container
	// EmptyDirs with a sizeLimit; LocalVolumes name the volumes whose
	// usage counts as the pod's on the node's disk (hostPath, gitRepo,
	// emptyDir on disk, configMap), as the kubelet's localVolumeNames.
	EmptyDirs    []EmptyDir
	LocalVolumes []string
	// EphemeralStorageLimit is the pod's summed ephemeral-storage limit
	// (resourcehelper.PodLimits, as upstream): set when any container has
	// one, nil when none has.
	EphemeralStorageLimit *resource.Quantity
	// Stats nil: the pod has no stats, and ranks first, as the kubelet's.
	Stats *PodStats
}

// Container is a container's requests and ephemeral-storage limit.
type Container struct {
	Name string
	// Init containers' ephemeral-storage limits are not checked one by
	// one, as the kubelet's.
	Init                    bool
	MemoryRequest           resource.Quantity
	EphemeralStorageRequest resource.Quantity
	EphemeralStorageLimit   *resource.Quantity
}

// EmptyDir is an emptyDir volume's size limit.
type EmptyDir struct {
	Name      string
	SizeLimit resource.Quantity
}

// PodStats is a pod's usage from the summary API.
type PodStats struct {
	MemoryWorkingSet *uint64
	Processes        *uint64
	// EphemeralStorageUsed is the summary's pod ephemeral-storage figure
	// (writable layers, logs, local volumes, /etc/hosts).
	EphemeralStorageUsed *uint64
	Containers           []ContainerStats
	Volumes              []VolumeStats
}

// ContainerStats is one container's usage.
type ContainerStats struct {
	Name             string
	MemoryWorkingSet *uint64
	Rootfs, Logs     *FsUsage
}

// VolumeStats is one volume's usage.
type VolumeStats struct {
	Name string
	FsUsage
}

// FsUsage is bytes and inodes used.
type FsUsage struct {
	UsedBytes, InodesUsed *uint64
}

// PodFromAPI takes the spec's part of a Pod; Stats stays for the caller.
func PodFromAPI(pod *v1.Pod) Pod {
	req := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
	p := Pod{
		UID: pod.UID, Namespace: pod.Namespace, Name: pod.Name, Generation: pod.Generation,
		QOS: podutil.QOSClass(pod), Critical: podutil.IsCritical(pod),
		TerminationGracePeriodSeconds: pod.Spec.TerminationGracePeriodSeconds,
		MemoryRequest:                 req[v1.ResourceMemory],
		EphemeralStorageRequest:       req[v1.ResourceEphemeralStorage],
	}
	if pod.Spec.Priority != nil {
		p.Priority = *pod.Spec.Priority
	}
	if resourcehelper.IsPodLevelResourcesSet(pod) && pod.Spec.Resources != nil {
		if q, ok := pod.Spec.Resources.Requests[v1.ResourceMemory]; ok {
			p.PodLevelMemoryRequest = &q
		}
	}
	for _, c := range pod.Spec.Containers {
		p.Containers = append(p.Containers, containerFromAPI(c))
	}
	for _, c := range pod.Spec.InitContainers {
		ic := containerFromAPI(c)
		ic.Init = true
		p.Containers = append(p.Containers, ic)
	}
	p.EmptyDirs, p.LocalVolumes = localVolumes(pod)
	limits := resourcehelper.PodLimits(pod, resourcehelper.PodResourcesOptions{})
	if q, ok := limits[v1.ResourceEphemeralStorage]; ok {
		p.EphemeralStorageLimit = &q
	}
	return p
}

func containerFromAPI(c v1.Container) Container {
	out := Container{
		Name:                    c.Name,
		MemoryRequest:           c.Resources.Requests[v1.ResourceMemory],
		EphemeralStorageRequest: c.Resources.Requests[v1.ResourceEphemeralStorage],
	}
	if q, ok := c.Resources.Limits[v1.ResourceEphemeralStorage]; ok && q.Value() != 0 {
		out.EphemeralStorageLimit = &q
	}
	return out
}

// localVolumes: the kubelet's localVolumeNames (hostPath and the local
// ephemeral volumes) and the emptyDirs with a positive size limit.
func localVolumes(pod *v1.Pod) ([]EmptyDir, []string) {
	var dirs []EmptyDir
	var names []string
	for _, vol := range pod.Spec.Volumes {
		src := vol.VolumeSource
		if e := src.EmptyDir; e != nil && e.SizeLimit != nil && e.SizeLimit.Sign() == 1 {
			dirs = append(dirs, EmptyDir{Name: vol.Name, SizeLimit: *e.SizeLimit})
		}
		if src.HostPath != nil || isLocalEphemeral(src) {
			names = append(names, vol.Name)
		}
	}
	return dirs, names
}

// isLocalEphemeral is the volume util's IsLocalEphemeralVolume: gitRepo,
// an emptyDir of the default medium, configMap (secrets are in memory).
func isLocalEphemeral(src v1.VolumeSource) bool {
	return src.GitRepo != nil ||
		(src.EmptyDir != nil && src.EmptyDir.Medium == v1.StorageMediumDefault) ||
		src.ConfigMap != nil
}
