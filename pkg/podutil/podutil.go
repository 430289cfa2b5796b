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

// Condition returns the status's condition of type t, nil if it has none.
func Condition(s *v1.PodStatus, t v1.PodConditionType) *v1.PodCondition {
	for i := range s.Conditions {
		if s.Conditions[i].Type == t {
			return &s.Conditions[i]
		}
	}
	return nil
}

// IsKubeletCondition reports whether the kubelet owns pod conditions of
// type t (upstream's kubetypes.PodConditionByKubelet). Others are set
// through the API by someone else (readiness gates, DisruptionTarget, ...):
// the agent reads them from the API and never overwrites them.
func IsKubeletCondition(t v1.PodConditionType) bool {
	switch t {
	case v1.PodScheduled, v1.PodReady, v1.PodInitialized, v1.ContainersReady, v1.PodReadyToStartContainers,
		v1.PodResizePending, v1.PodResizeInProgress:
		return true
	}
	return false
}

// ContainerShouldRestart says whether a container that exited with
// exitCode is restarted (upstream's podutil.ContainerShouldRestart,
// KEP-5307): with a container-level restartPolicy, its restartPolicyRules
// are evaluated in order and the first match decides (action Restart:
// restart); no match falls back to the container's restartPolicy. Without
// one (or without the container: nil), the pod's restartPolicy decides.
func ContainerShouldRestart(c *v1.Container, spec *v1.PodSpec, exitCode int32) bool {
	if c != nil && c.RestartPolicy != nil {
		if rule, ok := matchRestartRule(c.RestartPolicyRules, exitCode); ok && rule.Action == v1.ContainerRestartRuleActionRestart {
			return true
		}
		switch *c.RestartPolicy {
		case v1.ContainerRestartPolicyAlways:
			return true
		case v1.ContainerRestartPolicyOnFailure:
			return exitCode != 0
		case v1.ContainerRestartPolicyNever:
			return false
		}
	}
	switch spec.RestartPolicy {
	case v1.RestartPolicyOnFailure:
		return exitCode != 0
	case v1.RestartPolicyNever:
		return false
	}
	return true // Always, and the default
}

// RestartsWithoutExitCode says whether a container is restarted when there
// is no exit code to judge it by (killed for a failed liveness or startup
// probe, or in an unknown state): the rules need one, so only the
// container's restartPolicy, else the pod's, counts, as in upstream's
// computePodActions and computeInitContainerActions.
func RestartsWithoutExitCode(c *v1.Container, spec *v1.PodSpec) bool {
	if c.RestartPolicy != nil {
		return *c.RestartPolicy != v1.ContainerRestartPolicyNever
	}
	return spec.RestartPolicy != v1.RestartPolicyNever
}

// matchRestartRule returns the first rule whose exitCodes requirement the
// exit code satisfies; a rule with an unknown operator never matches.
func matchRestartRule(rules []v1.ContainerRestartRule, exitCode int32) (v1.ContainerRestartRule, bool) {
	for _, r := range rules {
		if r.ExitCodes == nil {
			continue
		}
		in := false
		for _, v := range r.ExitCodes.Values {
			in = in || v == exitCode
		}
		switch r.ExitCodes.Operator {
		case v1.ContainerRestartRuleOnExitCodesOpIn:
			if in {
				return r, true
			}
		case v1.ContainerRestartRuleOnExitCodesOpNotIn:
			if !in {
				return r, true
			}
		}
	}
	return v1.ContainerRestartRule{}, false
}
