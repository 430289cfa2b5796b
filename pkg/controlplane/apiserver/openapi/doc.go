// Package openapi builds and serves the API server's OpenAPI documents:
// /openapi/v2 (JSON, or protobuf for client-go's discovery client) and
// /openapi/v3 with one document per group version, with ETags, 304s and
// hash-addressed immutable caching, as upstream's kube-openapi handlers.
//
// The documents describe the registry.Resources given to New (their
// paths, operations and schemas derived from the Go types by
// reflection) and are built once, on first use. The core API server
// makes one Server at New and tries Serve before its other routes;
// SubresourceBody tells its field validation what a subresource's body is.
package openapi
