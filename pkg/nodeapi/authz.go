package nodeapi

import (
	"context"
	"net/http"
	"strings"
)

// Attributes describe a request to the node API as the API server's
// authorizers see an API request: a verb on nodes/<subresource>.
type Attributes struct {
	User        *UserInfo
	Verb        string
	APIVersion  string
	Resource    string
	Subresource string
	Name        string
	Path        string
}

// Authorizer decides whether a request may proceed.
type Authorizer interface {
	Authorize(ctx context.Context, a Attributes) (allowed bool, reason string, err error)
}

// AuthorizerFunc adapts a function.
type AuthorizerFunc func(ctx context.Context, a Attributes) (bool, string, error)

// Authorize calls f.
func (f AuthorizerFunc) Authorize(ctx context.Context, a Attributes) (bool, string, error) {
	return f(ctx, a)
}

// AlwaysAllow is the AlwaysAllow authorization mode.
func AlwaysAllow() Authorizer {
	return AuthorizerFunc(func(context.Context, Attributes) (bool, string, error) { return true, "", nil })
}

// The path prefixes with their own subresource, as upstream's
// GetRequestAttributes maps them; everything else is nodes/proxy.
var (
	subresourcePaths = []struct{ path, subresource string }{
		{"/stats", "stats"},
		{"/metrics", "metrics"},
		{"/logs", "log"},
		{"/checkpoint", "checkpoint"},
	}
	// Fine-grained subresources (KubeletFineGrainedAuthz, on by default
	// upstream) are asked first; nodes/proxy is the fallback that older
	// RBAC roles grant.
	fineGrainedPaths = []struct{ path, subresource string }{
		{"/pods", "pods"},
		{"/healthz", "healthz"},
		{"/configz", "configz"},
		{"/runningpods", "pods"},
	}
)

// requestAttributes lists the attributes to try in order: the request is
// allowed if any is.
func requestAttributes(nodeName string, u *UserInfo, r *http.Request) []Attributes {
	base := Attributes{User: u, Verb: apiVerb(r.Method), APIVersion: "v1", Resource: "nodes", Name: nodeName, Path: r.URL.Path}
	var subs []string
	for _, p := range fineGrainedPaths {
		if isSubpath(r.URL.Path, p.path) {
			subs = append(subs, p.subresource)
			break
		}
	}
	sub := "proxy"
	for _, p := range subresourcePaths {
		if isSubpath(r.URL.Path, p.path) {
			sub = p.subresource
			break
		}
	}
	out := make([]Attributes, 0, len(subs)+1)
	for _, s := range append(subs, sub) {
		a := base
		a.Subresource = s
		out = append(out, a)
	}
	return out
}

// apiVerb maps the HTTP method as upstream does; other methods get no
// verb, which no authorizer grants.
func apiVerb(method string) string {
	switch method {
	case http.MethodGet:
		return "get"
	case http.MethodPost:
		return "create"
	case http.MethodPut:
		return "update"
	case http.MethodPatch:
		return "patch"
	case http.MethodDelete:
		return "delete"
	}
	return ""
}

// isSubpath reports whether path is prefix or below it.
func isSubpath(path, prefix string) bool {
	prefix = strings.TrimSuffix(prefix, "/")
	return path == prefix || strings.HasPrefix(path, prefix+"/")
}
