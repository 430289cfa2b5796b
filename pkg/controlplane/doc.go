// Package controlplane holds the bundled control plane of `nodeagent
// server`: etcd (embedded or external), the PKI, the Kubernetes-compatible
// API server, and later the scheduler and controllers. Each concern lives
// in a sub-package; this package only assembles them.
package controlplane
