// Package nodelifecycle watches node heartbeats (the Node's Ready
// condition and its Lease in kube-node-lease) as kube-controller-manager's
// pkg/controller/nodelifecycle: a node silent for longer than the grace
// period gets every condition set to Unknown and the unreachable taints; a
// node reporting Ready=False gets the not-ready taints; the taints go when
// the node is healthy again. Pods on a node with NoExecute taints they do
// not tolerate are deleted, at once or after their tolerationSeconds
// (pkg/controller/tainteviction). When every node is unhealthy the
// NoExecute taints are withheld, as upstream's "master disruption mode":
// a control plane that lost all its nodes does not evict everything.
//
//	c := nodelifecycle.New(client, factory, nodelifecycle.Config{}, log)
//	factory.Start(ctx.Done())
//	err := c.Run(ctx)
package nodelifecycle
