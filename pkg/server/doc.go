// Package server serves the agent's plain-HTTP endpoints: the kubelet's
// read-only port (/pods, /healthz; loopback by default since it has no
// authentication) and the healthz port. The authenticated :10250 server
// of the node API arrives with its own issue.
package server
