// Package apiserver serves the Kubernetes REST API over the resources
// described by pkg/controlplane/registry, stored by
// pkg/controlplane/storage: routing, verbs (get, list, watch, create,
// update, patch, delete), discovery, Status errors and Table output, so
// that unmodified kubectl and client-go work against it.
package apiserver
