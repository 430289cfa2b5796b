// Package apiserver serves the Kubernetes REST API over the resources
// described by pkg/controlplane/registry, stored by
// pkg/controlplane/storage: routing, verbs (get, list, watch, create,
// update, patch, delete), discovery, Status errors and Table output, so
// that unmodified kubectl and client-go work against it.
//
// Writes pass upstream's built-in admission in upstream's order: the
// mutating plugins (NamespaceLifecycle, ServiceAccount,
// DefaultTolerationSeconds, DefaultStorageClass, NodeRestriction) before defaulting and
// validation, PodSecurity after them on the final object. Warnings reach
// the client as Warning headers.
package apiserver
