// Package agent assembles the node agent from its parts: the CRI client,
// the static pod source, the pod workers, the PLEG, the container log
// rotation and the HTTP servers.
// It holds wiring and start-up order only; each concern lives in its own
// package.
package agent
