// Package registry describes every resource the API server serves, as data
// plus small hook functions, so that the HTTP layer (pkg/controlplane/apiserver)
// stays generic: discovery facts (names, short names, categories, verbs,
// subresources), constructors, and the per-resource behaviour upstream
// kube-apiserver keeps in pkg/registry/*/strategy.go and rest.go,
// pkg/apis/*/validation and pkg/printers/internalversion: defaulting,
// preparing objects for create and update, validation, field-selector
// attributes, Table output, and what a create or delete does beyond the
// object itself.
//
// New builds a Registry: every resource, made by a constructor function
// (a builder method per resource) with its hooks, fixed once New returns.
// There is no package-level state: the Registry's Config.Clock (real by
// default, a fake one in tests) gives Table's AGE columns and the times
// hooks stamp into objects, and the lock that serializes service IP and
// port allocation is the Registry's own. The API server takes the
// Registry in its Config and serves All, Get and ResourceMetrics.
//
// Hooks work on the versioned (k8s.io/api) types directly: there is no
// internal version; a nil hook means "nothing to do". A create runs
// Default, PrepareForCreate, Validate, then BeginCreate just before the
// object is stored and AfterCreate once it is; an update runs Default,
// PrepareForUpdate, ValidateUpdate; a status update runs
// PrepareForStatusUpdate, ValidateStatusUpdate; an update through
// pods/ephemeralcontainers runs Default,
// PrepareForEphemeralContainersUpdate, ValidateEphemeralContainersUpdate;
// one through pods/resize runs Default, PrepareForResizeUpdate,
// ValidateResizeUpdate.
// A delete takes GracePeriod's grace; an object with a grace period,
// finalizers or a FinalizeDelete hook is only marked (PrepareForDelete
// runs on it), and a resource with FinalizeDelete removes its objects
// itself. Bind serves the binding subresource.
//
// The hooks that touch other objects (services: cluster IPs and node
// ports from package allocator, against the stored services; namespaces:
// their default service account, and emptying before removal) reach the
// server through the Storage interface, which the API server implements.
// Generic metadata (uid, creationTimestamp, resourceVersion,
// generateName, the deletion timestamp), admission and the semantics of
// the other connect/action subresources (log, exec, eviction, token, the
// reviews ...) are the HTTP layer's business; they are only listed here.
package registry
