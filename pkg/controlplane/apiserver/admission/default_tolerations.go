package admission

import (
	"context"

	admissionv1 "k8s.io/api/admission/v1"
	v1 "k8s.io/api/core/v1"
)

// defaultTolerationSeconds is the DefaultTolerationSeconds plugin's
// value for not-ready and unreachable nodes.
const defaultTolerationSeconds = int64(300)

// DefaultTolerationSeconds is upstream's plugin of that name: a created
// pod tolerates not-ready and unreachable nodes for 300 seconds unless
// it has its own tolerations for them.
type DefaultTolerationSeconds struct{}

var _ MutationInterface = (*DefaultTolerationSeconds)(nil)

// Name is the plugin's upstream name.
func (*DefaultTolerationSeconds) Name() string { return DefaultTolerationSecondsName }

// Handles: creates.
func (*DefaultTolerationSeconds) Handles(op admissionv1.Operation) bool {
	return op == admissionv1.Create
}

// Admit adds the tolerations to a created pod.
func (*DefaultTolerationSeconds) Admit(_ context.Context, a *Attributes) error {
	if pod, ok := a.Object.(*v1.Pod); ok && a.Subresource == "" {
		addDefaultTolerations(pod)
	}
	return nil
}

// addDefaultTolerations adds the not-ready/unreachable tolerations
// unless the pod has its own.
func addDefaultTolerations(pod *v1.Pod) {
	for _, key := range []string{v1.TaintNodeNotReady, v1.TaintNodeUnreachable} {
		has := false
		for _, t := range pod.Spec.Tolerations {
			if (t.Key == key || (t.Key == "" && t.Operator == v1.TolerationOpExists)) &&
				(t.Effect == v1.TaintEffectNoExecute || t.Effect == "") {
				has = true
			}
		}
		if !has {
			secs := defaultTolerationSeconds
			pod.Spec.Tolerations = append(pod.Spec.Tolerations, v1.Toleration{
				Key: key, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute, TolerationSeconds: &secs,
			})
		}
	}
}
