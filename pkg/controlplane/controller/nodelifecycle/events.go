package nodelifecycle

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// nodeRef is how upstream's node events refer to the Node.
func nodeRef(name string, uid types.UID) *v1.ObjectReference {
	return &v1.ObjectReference{APIVersion: "v1", Kind: "Node", Name: name, UID: uid}
}

// register reports a node the controller has not seen before, as
// upstream's RegisteredNode (also for every node after a restart).
func (c *Controller) register(n *v1.Node) {
	if uid, ok := c.known[n.Name]; ok && uid == n.UID {
		return
	}
	c.known[n.Name] = n.UID
	c.recordNodeEvent(n.Name, n.UID, "RegisteredNode", fmt.Sprintf("Registered Node %s in Controller", n.Name))
}

// forget reports a node that is gone, as upstream's RemovingNode.
func (c *Controller) forget(name string) {
	uid, ok := c.known[name]
	if !ok {
		return
	}
	delete(c.known, name)
	c.recordNodeEvent(name, uid, "RemovingNode", fmt.Sprintf("Removing Node %s from Controller", name))
}

func (c *Controller) recordNodeEvent(name string, uid types.UID, reason, event string) {
	c.recorder.Eventf(nodeRef(name, uid), v1.EventTypeNormal, reason, "Node %s event: %s", name, event)
}

// recordStatusChange is upstream's RecordNodeStatusChange.
func (c *Controller) recordStatusChange(n *v1.Node, status string) {
	c.recorder.Eventf(nodeRef(n.Name, n.UID), v1.EventTypeNormal, status, "Node %s status is now: %s", n.Name, status)
}
