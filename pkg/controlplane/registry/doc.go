// Package registry describes every resource the API server serves, as data
// plus small hook functions, so that the HTTP layer (pkg/controlplane/apiserver)
// stays generic: discovery facts (names, short names, categories, verbs,
// subresources), constructors, and the per-resource behaviour upstream
// kube-apiserver keeps in pkg/registry/*/strategy.go, pkg/apis/*/validation
// and pkg/printers/internalversion: defaulting, preparing objects for create
// and update, validation, field-selector attributes and Table output.
//
// Hooks work on the versioned (k8s.io/api) types directly: there is no
// internal version. A create runs Default, PrepareForCreate, Validate; an
// update runs Default, PrepareForUpdate, ValidateUpdate; a status update runs
// PrepareForStatusUpdate, ValidateStatusUpdate; an update through
// pods/ephemeralcontainers runs Default, PrepareForEphemeralContainersUpdate,
// ValidateEphemeralContainersUpdate. Generic metadata (uid,
// creationTimestamp, resourceVersion, generateName, deletion) is the HTTP
// layer's business, as are the allocation of service cluster IPs and node
// ports and the semantics of the connect/action subresources (log, exec,
// binding, eviction, token ...), which are only listed here.
//
// New builds a Registry: every resource, made by a constructor function
// (a builder method per resource) with its hooks, fixed once New returns.
// There is no package-level state: the Registry's Config.Clock (real by
// default, a fake one in tests) gives Table's AGE columns and the times
// hooks stamp into objects. The API server takes the Registry in its
// Config and serves All, Get and ResourceMetrics.
package registry
