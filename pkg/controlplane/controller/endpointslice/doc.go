// Package endpointslice is the EndpointSlice controller, as
// kube-controller-manager's pkg/controller/endpointslice with the
// reconciler of k8s.io/endpointslice: every Service with a selector gets
// discovery.k8s.io/v1 EndpointSlices listing the pods it selects.
//
//   - Slices are per address type (the service's IP families; without
//     them the cluster IP's family, or both for headless services) and
//     per set of ports (a named targetPort may resolve differently, or not
//     at all, on different pods); each holds at most 100 endpoints.
//   - An endpoint is a pod with an IP that has not finished: its
//     addresses of the slice's type, the pod as targetRef, nodeName, the
//     node's topology.kubernetes.io/zone, the hostname when the pod's
//     subdomain names the service, and conditions: serving (the pod is
//     Ready), terminating (it is being deleted) and ready (serving and not
//     terminating, or always with publishNotReadyAddresses). Pods on nodes
//     the controller does not know are left out (and the service retried)
//     unless the service publishes not-ready addresses.
//   - Slices are labelled kubernetes.io/service-name and
//     endpointslice.kubernetes.io/managed-by=endpointslice-controller.k8s.io
//     on top of the service's labels (and service.kubernetes.io/headless),
//     and owned by the service, so that the garbage collector deletes them
//     with it. A service without endpoints has one empty placeholder slice.
//   - Changes are incremental: endpoints that did not change stay where
//     they are, changed ones are rewritten in place, new ones fill the
//     slices being written anyway first, then the unchanged slice they
//     fit best, then new slices; slices left empty are deleted (or reused
//     instead of creating new ones).
//   - endpoints.kubernetes.io/last-change-trigger-time tells when the
//     change that caused a write happened.
//
// The controller remembers the generation of every slice it wrote and
// waits for its informer to catch up before writing again, so that it
// never writes over its own writes from a stale cache. Services without a
// selector (their slices are the user's) and ExternalName services are
// left alone.
//
//	c := endpointslice.New(client, factory, log)
//	factory.Start(ctx.Done())
//	err := c.Run(ctx, 2)
package endpointslice
