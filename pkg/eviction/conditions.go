package eviction

import v1 "k8s.io/api/core/v1"

// Pressure is what a node condition says in each state, and its events,
// as the kubelet's node status setters (pkg/kubelet/nodestatus/setters.go).
type Pressure struct {
	Type                      v1.NodeConditionType
	TrueReason, TrueMessage   string
	FalseReason, FalseMessage string
	TrueEvent, FalseEvent     string
	// Taint is the NoSchedule taint the node lifecycle controller keeps
	// on a node whose condition is True.
	Taint string
}

// Pressures are the three conditions the eviction manager drives.
var Pressures = []Pressure{
	{
		Type: v1.NodeMemoryPressure, Taint: v1.TaintNodeMemoryPressure,
		TrueReason: "KubeletHasInsufficientMemory", TrueMessage: "kubelet has insufficient memory available",
		FalseReason: "KubeletHasSufficientMemory", FalseMessage: "kubelet has sufficient memory available",
		TrueEvent: "NodeHasInsufficientMemory", FalseEvent: "NodeHasSufficientMemory",
	},
	{
		Type: v1.NodeDiskPressure, Taint: v1.TaintNodeDiskPressure,
		TrueReason: "KubeletHasDiskPressure", TrueMessage: "kubelet has disk pressure",
		FalseReason: "KubeletHasNoDiskPressure", FalseMessage: "kubelet has no disk pressure",
		TrueEvent: "NodeHasDiskPressure", FalseEvent: "NodeHasNoDiskPressure",
	},
	{
		Type: v1.NodePIDPressure, Taint: v1.TaintNodePIDPressure,
		TrueReason: "KubeletHasInsufficientPID", TrueMessage: "kubelet has insufficient PID available",
		FalseReason: "KubeletHasSufficientPID", FalseMessage: "kubelet has sufficient PID available",
		TrueEvent: "NodeHasInsufficientPID", FalseEvent: "NodeHasSufficientPID",
	},
}

// NodeConditions are the three pressure conditions for the active set
// (Plan.Conditions), without times: the status writer keeps
// lastTransitionTime when the status did not change, and records the
// Normal event (TrueEvent/FalseEvent) when it did.
func NodeConditions(active []v1.NodeConditionType) []v1.NodeCondition {
	out := make([]v1.NodeCondition, 0, len(Pressures))
	for _, p := range Pressures {
		c := v1.NodeCondition{Type: p.Type, Status: v1.ConditionFalse, Reason: p.FalseReason, Message: p.FalseMessage}
		if HasNodeCondition(active, p.Type) {
			c.Status, c.Reason, c.Message = v1.ConditionTrue, p.TrueReason, p.TrueMessage
		}
		out = append(out, c)
	}
	return out
}

// Taints are the NoSchedule taints for the active conditions.
func Taints(active []v1.NodeConditionType) []v1.Taint {
	var out []v1.Taint
	for _, p := range Pressures {
		if HasNodeCondition(active, p.Type) {
			out = append(out, v1.Taint{Key: p.Taint, Effect: v1.TaintEffectNoSchedule})
		}
	}
	return out
}
