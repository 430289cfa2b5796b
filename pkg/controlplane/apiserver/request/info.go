package request

import (
	"net/http"
	"strings"
)

// Info is what a resource request's path and method say.
type Info struct {
	Group, Version string
	Namespace      string
	Resource       string // plural
	Name           string
	Subresource    string
	Verb           string // get, list, watch, create, update, patch, delete, deletecollection
}

// ParseResourcePath splits /api/v1/... and /apis/<group>/<version>/...
// paths; ok is false for anything else (discovery, /version...).
func ParseResourcePath(method, path string, watchParam bool) (Info, bool) {
	var ri Info
	parts := strings.Split(strings.Trim(path, "/"), "/")
	switch {
	case len(parts) >= 3 && parts[0] == "api":
		ri.Version, parts = parts[1], parts[2:]
	case len(parts) >= 4 && parts[0] == "apis":
		ri.Group, ri.Version, parts = parts[1], parts[2], parts[3:]
	default:
		return ri, false
	}
	// namespaces/<ns>/<resource>... unless the request is about the
	// namespace object itself (namespaces, namespaces/<name>[/<sub>]).
	if parts[0] == "namespaces" && len(parts) >= 3 {
		ri.Namespace, parts = parts[1], parts[2:]
	}
	ri.Resource = parts[0]
	if len(parts) >= 2 {
		ri.Name = parts[1]
	}
	if len(parts) >= 3 {
		ri.Subresource = parts[2]
	}
	// Only proxy takes a path below it (nodes/<name>/proxy/<path>), which
	// the proxy handler reads from the URL; a proxied GET is a get even
	// with a watch parameter meant for the backend.
	if len(parts) > 3 && ri.Subresource != "proxy" {
		return ri, false
	}
	ri.Verb = verb(method, ri.Name != "", watchParam && ri.Subresource != "proxy")
	return ri, ri.Verb != ""
}

func verb(method string, named, watch bool) string {
	switch method {
	case http.MethodGet, http.MethodHead:
		switch {
		case watch:
			return "watch"
		case named:
			return "get"
		}
		return "list"
	case http.MethodPost:
		return "create"
	case http.MethodPut:
		if named {
			return "update"
		}
	case http.MethodPatch:
		if named {
			return "patch"
		}
	case http.MethodDelete:
		if named {
			return "delete"
		}
		return "deletecollection"
	}
	return ""
}
