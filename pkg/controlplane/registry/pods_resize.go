package registry

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"

	"github.com/nodeagent/nodeagent/pkg/podutil"
)

// preparePodForResize keeps only the request's containers' resources and
// resize policies (regular containers and sidecars, matched by name), as
// upstream's podResizeStrategy (dropNonResizeUpdates): everything else,
// metadata and status included, is the stored pod's, but for the
// resourceVersion the write is checked against. A changed spec moves the
// generation on, which the kubelet's conditions then observe.
func preparePodForResize(pod, old *v1.Pod) {
	out := old.DeepCopy()
	out.Name, out.Namespace, out.UID, out.ResourceVersion = pod.Name, pod.Namespace, pod.UID, pod.ResourceVersion
	takeResources(out.Spec.Containers, pod.Spec.Containers, func(*v1.Container) bool { return true })
	takeResources(out.Spec.InitContainers, pod.Spec.InitContainers, podutil.IsSidecar)
	if !equality.Semantic.DeepEqual(out.Spec, old.Spec) {
		out.Generation = old.Generation + 1
	}
	*pod = *out
}

// takeResources copies resources and resizePolicy from the request's
// containers of the same name onto dst's containers that may be resized.
func takeResources(dst, req []v1.Container, resizable func(*v1.Container) bool) {
	index := make(map[string]int, len(dst))
	for i := range dst {
		index[dst[i].Name] = i
	}
	for _, c := range req {
		if i, ok := index[c.Name]; ok && resizable(&dst[i]) {
			dst[i].Resources = c.Resources
			dst[i].ResizePolicy = c.ResizePolicy
		}
	}
}
