// Package replicaset is the ReplicaSet controller: it keeps spec.replicas
// active pods that match the selector and are owned through a
// controllerRef, and reports status, as kube-controller-manager's
// pkg/controller/replicaset.
//
//	c := replicaset.New(client, factory, log)
//	factory.Start(ctx.Done())
//	err := c.Run(ctx, 2)
package replicaset
