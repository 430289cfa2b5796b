// Package controlplane holds the bundled control plane of `nodeagent
// server`: etcd (embedded or external), the PKI, the Kubernetes-compatible
// API server, the scheduler, the controllers and the cluster DNS. Each
// concern lives in a sub-package; package server assembles them.
package controlplane
