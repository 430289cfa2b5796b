// Package server serves the agent's plain-HTTP endpoints: the kubelet's
// read-only port (/pods, /healthz; loopback by default since it has no
// authentication) and the healthz port. The authenticated :10250 node API
// (logs, exec, metrics) is package nodeapi.
package server
