// Package clusterroleaggregation is kube-controller-manager's ClusterRole
// aggregation controller (pkg/controller/clusterroleaggregation): the rules
// of a ClusterRole with an aggregationRule are the union of the rules of
// the ClusterRoles its selectors match. That is how admin, edit and view
// take in system:aggregate-to-* and every role a user labels
// rbac.authorization.k8s.io/aggregate-to-view=true (and so on).
//
// As upstream: the matched roles are taken per selector in name order and
// the role itself is skipped; a rule already taken is not taken twice
// (equal rules, not covering ones); the result is written only when it
// differs from the role's rules, by a server-side apply of the rules as
// field manager clusterrole-aggregation-controller, or by an update where
// the server does not take apply patches. Any ClusterRole added, changed
// or deleted queues every aggregated role, since which roles feed which
// is only known by evaluating the selectors.
//
// Use:
//
//	c := clusterroleaggregation.New(client, factory, log)
//	factory.Start(ctx.Done())
//	err := c.Run(ctx, clusterroleaggregation.Workers)
package clusterroleaggregation
