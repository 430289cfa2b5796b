package registry

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// preparePodForEphemeralContainersUpdate keeps only the request's
// spec.ephemeralContainers, as upstream's podEphemeralContainersStrategy:
// the rest of the spec, the status and the metadata a status write may not
// touch (labels, annotations, finalizers, owner references, deletion
// timestamp, generation) come from the stored pod. Adding a container
// changes the spec, so the generation moves on.
func preparePodForEphemeralContainersUpdate(pod, old *v1.Pod) {
	ephemeral := pod.Spec.EphemeralContainers
	pod.Spec = *old.Spec.DeepCopy()
	pod.Spec.EphemeralContainers = ephemeral
	pod.Status = *old.Status.DeepCopy()
	metav1.ResetObjectMetaForStatus(&pod.ObjectMeta, &old.ObjectMeta)
	if !equality.Semantic.DeepEqual(pod.Spec, old.Spec) {
		pod.Generation = old.Generation + 1
	}
}
