// Package agent assembles the node agent from its parts: the CRI client,
// the pod sources (pkg/podsource), the API side (pkg/apiclient), the pod
// workers, the PLEG, kubenet and the service proxy, the container log
// rotation and the HTTP servers, all run under one errgroup and stopped in
// reverse order.
// It holds wiring and start-up order only; each concern lives in its own
// package.
package agent
