package podutil

import (
	v1 "k8s.io/api/core/v1"
)

// The kubelet's pod source annotations (pkg/kubelet/types).
const (
	// ConfigSourceAnnotation names the source a pod came from: SourceFile
	// or SourceAPI.
	ConfigSourceAnnotation = "kubernetes.io/config.source"
	// ConfigHashAnnotation is a static pod's hash, which is also its UID
	// and its mirror pod's ConfigMirrorAnnotation.
	ConfigHashAnnotation = "kubernetes.io/config.hash"
	// ConfigMirrorAnnotation marks a mirror pod (v1.MirrorPodAnnotationKey).
	ConfigMirrorAnnotation = v1.MirrorPodAnnotationKey
	// ConfigSeenAnnotation is when the source first saw the pod.
	ConfigSeenAnnotation = "kubernetes.io/config.seen"

	// SourceFile is the config.source of static pods from manifest files.
	SourceFile = "file"
	// SourceAPI is the config.source of pods from the API server.
	SourceAPI = "api"
)

// IsStatic reports whether the pod came from a manifest file.
func IsStatic(pod *v1.Pod) bool {
	return pod.Annotations[ConfigSourceAnnotation] == SourceFile
}

// IsSidecar reports whether c, an init container, is a sidecar: one whose
// restartPolicy is Always (KEP-753). nil is no sidecar.
func IsSidecar(c *v1.Container) bool {
	return c != nil && c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways
}

// IsSidecarNamed reports whether the pod's init container called name is a
// sidecar.
func IsSidecarNamed(pod *v1.Pod, name string) bool {
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == name {
			return IsSidecar(&pod.Spec.InitContainers[i])
		}
	}
	return false
}

// IsKubeletCondition reports whether the kubelet owns pod conditions of
// type t (upstream's kubetypes.PodConditionByKubelet). Others are set
// through the API by someone else (readiness gates, DisruptionTarget, ...):
// the agent reads them from the API and never overwrites them.
func IsKubeletCondition(t v1.PodConditionType) bool {
	switch t {
	case v1.PodScheduled, v1.PodReady, v1.PodInitialized, v1.ContainersReady, v1.PodReadyToStartContainers:
		return true
	}
	return false
}
