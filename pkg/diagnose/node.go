package diagnose

import (
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// pressureConditions are the node conditions that are bad when True.
var pressureConditions = []v1.NodeConditionType{
	v1.NodeMemoryPressure, v1.NodeDiskPressure, v1.NodePIDPressure, v1.NodeNetworkUnavailable,
}

// nodeDown: the pod's node is gone or not Ready, so its kubelet runs
// nothing new and the pod's status is as old as the node's last report.
func nodeDown(c *check) (Diagnosis, bool) {
	name := c.pod.Spec.NodeName
	n := c.in.Node
	if n == nil {
		return Diagnosis{Component: Node,
			Summary: fmt.Sprintf("Pod %s is %s: it is bound to node %s, which does not exist", c.key, c.status(""), name)}, true
	}
	ready := nodeCondition(n, v1.NodeReady)
	if ready != nil && ready.Status == v1.ConditionTrue {
		return Diagnosis{}, false
	}
	state := "NotReady"
	ev := []string{}
	if ready == nil {
		ev = append(ev, "no Ready condition: its kubelet has not reported")
	} else {
		ev = append(ev, describeNodeCondition(name, ready))
		if ready.Status == v1.ConditionUnknown {
			state = "NotReady (its kubelet stopped reporting)"
		}
	}
	for _, t := range n.Spec.Taints {
		if strings.HasPrefix(t.Key, "node.kubernetes.io/") {
			ev = append(ev, fmt.Sprintf("node %s taint %s:%s", name, t.Key, t.Effect))
		}
	}
	return Diagnosis{Component: Node, Evidence: ev,
		Summary: fmt.Sprintf("Pod %s is %s: its node %s is %s, so its status is what the node last reported", c.key, c.status(""), name, state)}, true
}

// withPressure adds a node under pressure to a diagnosis of a pod that is
// not healthy; a healthy pod on such a node gets it as evidence only.
func (c *check) withPressure(d Diagnosis) Diagnosis {
	n := c.in.Node
	if n == nil || c.pod.Spec.NodeName == "" || d.Component == Node {
		return d
	}
	for _, t := range pressureConditions {
		if cond := nodeCondition(n, t); cond != nil && cond.Status == v1.ConditionTrue {
			d.Evidence = append(d.Evidence, describeNodeCondition(n.Name, cond))
		}
	}
	return d
}

// pressure: nothing else explains the pod, and its node is under
// pressure (the kubelet evicts and refuses pods then).
func (c *check) pressure() (Diagnosis, bool) {
	d := c.withPressure(Diagnosis{})
	if len(d.Evidence) == 0 {
		return Diagnosis{}, false
	}
	d.Component = Node
	d.Summary = fmt.Sprintf("Pod %s is %s and not Ready, and its node %s is under pressure", c.key, c.status(""), c.pod.Spec.NodeName)
	if cond := podCondition(c.pod, v1.PodReady); cond != nil {
		d.Evidence = append(d.Evidence, describePodCondition(cond))
	}
	return d, true
}

func nodeCondition(n *v1.Node, t v1.NodeConditionType) *v1.NodeCondition {
	for i := range n.Status.Conditions {
		if n.Status.Conditions[i].Type == t {
			return &n.Status.Conditions[i]
		}
	}
	return nil
}

func describeNodeCondition(node string, c *v1.NodeCondition) string {
	s := fmt.Sprintf("node %s condition %s=%s", node, c.Type, c.Status)
	if c.Reason != "" {
		s += " " + c.Reason
	}
	if c.Message != "" {
		s += fmt.Sprintf(": %q", c.Message)
	}
	return s
}
