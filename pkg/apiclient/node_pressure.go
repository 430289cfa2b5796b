package apiclient

import (
	v1 "k8s.io/api/core/v1"

	"github.com/nodeagent/nodeagent/pkg/eviction"
)

// SetPressure sets NodeConfig.Pressure for a NodeStatus built by New;
// call it before Run.
func (n *NodeStatus) SetPressure(fn func() []v1.NodeConditionType) { n.cfg.Pressure = fn }

// pressureConditions are MemoryPressure, DiskPressure and PIDPressure
// with the kubelet's reasons and messages for the eviction manager's
// active set (setCondition keeps their transition times while their
// status holds).
func (n *NodeStatus) pressureConditions() []v1.NodeCondition {
	var active []v1.NodeConditionType
	if n.cfg.Pressure != nil {
		active = n.cfg.Pressure()
	}
	return eviction.NodeConditions(active)
}
