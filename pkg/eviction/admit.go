package eviction

import (
	"github.com/go-logr/logr"
	v1 "k8s.io/api/core/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"

	"github.com/nodeagent/nodeagent/pkg/podutil"
)

// Admission is the eviction manager's answer to a new pod.
type Admission struct {
	Admit           bool
	Reason, Message string
}

// Admit is the kubelet's eviction admission handler: without pressure
// every pod; critical pods always; under memory pressure alone every pod
// but BestEffort ones that do not tolerate the memory-pressure taint;
// under any other pressure none. Refusals say Reason "Evicted" and
// "The node had condition: [DiskPressure]. ".
func Admit(conditions []v1.NodeConditionType, pod *v1.Pod) Admission {
	if len(conditions) == 0 || podutil.IsCritical(pod) {
		return Admission{Admit: true}
	}
	if len(conditions) == 1 && conditions[0] == v1.NodeMemoryPressure {
		if podutil.QOSClass(pod) != v1.PodQOSBestEffort {
			return Admission{Admit: true}
		}
		taint := v1.Taint{Key: v1.TaintNodeMemoryPressure, Effect: v1.TaintEffectNoSchedule}
		if corev1helpers.TolerationsTolerateTaint(logr.Discard(), pod.Spec.Tolerations, &taint, false) {
			return Admission{Admit: true}
		}
	}
	return Admission{Reason: Reason, Message: conditionsMessage(conditions)}
}
