// Package probe runs the liveness, readiness and startup probes of the
// node's containers, as the kubelet's prober does: one worker goroutine per
// container and probe kind, started when the pod is added and stopped when
// it is removed, probing every periodSeconds once the container has run for
// initialDelaySeconds. A result changes only after successThreshold
// successes or failureThreshold failures in a row; changes are cached per
// container ID and announced to the pod worker, which kills containers
// failing liveness or startup and fills container readiness from the cache.
//
// Handlers: exec (CRI ExecSync with the probe's timeout), httpGet, tcpSocket
// and grpc (the standard health protocol); each is a plain function tested
// against real local servers.
package probe
