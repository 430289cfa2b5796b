// Package podspec holds the API-level rules for v1.Pod objects: the defaults
// the Kubernetes API server fills in (SetDefaults) and the checks it applies on
// create (Validate) and update (ValidateUpdate).
//
// The node agent uses it for static pod manifests read from disk, which never
// pass through an API server; the project's own API server uses it for pods
// posted to it. Both must therefore accept and reject exactly what upstream
// Kubernetes does, with the same field paths in the errors
// (e.g. "spec.containers[0].image: Required value"). The rules follow
// k8s.io/kubernetes pkg/apis/core/v1/defaults.go and
// pkg/apis/core/validation/validation.go with all feature gates at their
// default; rules for rarely used fields (in-tree cloud volume plugins,
// Windows options) are not carried over.
package podspec
