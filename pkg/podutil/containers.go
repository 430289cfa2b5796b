package podutil

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
)

// AllContainers lists init containers, then app containers: the ones
// whose settings shape the pod as a whole (QoS, sandbox privileges).
func AllContainers(pod *v1.Pod) []v1.Container {
	return append(append([]v1.Container{}, pod.Spec.InitContainers...), pod.Spec.Containers...)
}

// FindContainer is the pod's container called name, looked for among the
// ephemeral, init and app containers, or nil.
func FindContainer(pod *v1.Pod, name string) *v1.Container {
	for i := range pod.Spec.EphemeralContainers {
		if pod.Spec.EphemeralContainers[i].Name == name {
			c := v1.Container(pod.Spec.EphemeralContainers[i].EphemeralContainerCommon)
			return &c
		}
	}
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == name {
			return &pod.Spec.InitContainers[i]
		}
	}
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == name {
			return &pod.Spec.Containers[i]
		}
	}
	return nil
}

// Desc names the pod as upstream's format.Pod does, name_namespace(uid):
// the form the kubelet's messages use.
func Desc(pod *v1.Pod) string { return fmt.Sprintf("%s_%s(%s)", pod.Name, pod.Namespace, pod.UID) }
