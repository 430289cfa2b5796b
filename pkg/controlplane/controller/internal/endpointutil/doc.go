// Package endpointutil holds what the Endpoints and EndpointSlice
// controllers share, as upstream's k8s.io/endpointslice/util: which pods
// back a service, how a service port resolves on a pod, which services a
// pod change concerns, and the last-change trigger time.
package endpointutil
