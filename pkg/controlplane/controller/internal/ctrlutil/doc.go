// Package ctrlutil holds what the controllers share: the work loop over a
// rate-limited queue, informer event plumbing, controllerRef claiming
// through patches (upstream's pkg/controller ControllerRefManager) and the
// event pipeline (Events).
package ctrlutil
