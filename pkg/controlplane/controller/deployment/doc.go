// Package deployment is the Deployment controller: it rolls a Deployment's
// pod template out through ReplicaSets named "<deployment>-<pod-template-
// hash>" (RollingUpdate with maxSurge/maxUnavailable, or Recreate), scales
// old ReplicaSets down as new pods become available, keeps
// revisionHistoryLimit old ReplicaSets and reports status and the
// Available/Progressing conditions that `kubectl rollout status` reads, as
// kube-controller-manager's pkg/controller/deployment.
//
//	c := deployment.New(client, factory, log)
//	factory.Start(ctx.Done())
//	err := c.Run(ctx, 2)
package deployment
