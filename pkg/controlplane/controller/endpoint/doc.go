// Package endpoint is the Endpoints controller, as kube-controller-manager's
// pkg/controller/endpoint: every Service with a selector gets a core/v1
// Endpoints object of the same name listing the pods it selects.
//
//   - A pod with an IP that has not finished is listed; ready pods (Ready
//     condition True) under addresses, others under notReadyAddresses,
//     all under addresses when the service sets publishNotReadyAddresses
//     (which also keeps pods being deleted). Pods being deleted are left
//     out otherwise.
//   - Each address carries the pod as targetRef, its nodeName, and its
//     hostname when the pod's subdomain names the service.
//   - Ports are the service's, resolved per pod: a numeric targetPort as
//     is, a named one through the pod's container ports; a pod lacking the
//     name is not listed for that port. Headless services without ports
//     list addresses alone.
//   - Subsets are packed as upstream's RepackSubsets: one subset per set
//     of addresses, with every port those addresses serve, sorted.
//   - Labels are the service's, plus service.kubernetes.io/headless for
//     headless services; endpoints.kubernetes.io/last-change-trigger-time
//     tells when the change that caused the write happened; more than 1000
//     addresses are truncated and annotated over-capacity.
//
// Services without a selector (such as default/kubernetes, whose
// endpoints belong to the API server) and ExternalName services are left
// alone. When a service goes, its Endpoints go too; at start, Endpoints
// without a service are deleted (leader-election records excepted).
//
//	c := endpoint.New(client, factory, log)
//	factory.Start(ctx.Done())
//	err := c.Run(ctx, 2)
package endpoint
