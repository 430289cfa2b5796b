package apiserver

import (
	"net/http"
	"runtime"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/version"

	"github.com/nodeagent/nodeagent/pkg/controlplane/apiserver/responsewriters"
	"github.com/nodeagent/nodeagent/pkg/controlplane/registry"
)

// serveDiscovery answers /api, /apis, group and group-version resource
// lists and /version (the legacy discovery documents kubectl and
// client-go fall back to). It reports whether it handled the request.
func (s *Server) serveDiscovery(w http.ResponseWriter, r *http.Request) bool {
	if r.Method != http.MethodGet {
		return false
	}
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	switch {
	case r.URL.Path == "/version":
		responsewriters.WriteJSON(w, http.StatusOK, version.Info{
			Major: Version.Major, Minor: Version.Minor, GitVersion: Version.GitVersion,
			GoVersion: runtime.Version(), Compiler: runtime.Compiler, Platform: runtime.GOOS + "/" + runtime.GOARCH,
		})
	case len(parts) == 1 && parts[0] == "api":
		responsewriters.WriteJSON(w, http.StatusOK, &metav1.APIVersions{
			TypeMeta:                   metav1.TypeMeta{Kind: "APIVersions"},
			Versions:                   []string{"v1"},
			ServerAddressByClientCIDRs: []metav1.ServerAddressByClientCIDR{{ClientCIDR: "0.0.0.0/0", ServerAddress: r.Host}},
		})
	case len(parts) == 2 && parts[0] == "api" && parts[1] == "v1":
		responsewriters.WriteJSON(w, http.StatusOK, s.resourceList("", "v1"))
	case len(parts) == 1 && parts[0] == "apis":
		list := &metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}}
		for _, g := range s.groups() {
			list.Groups = append(list.Groups, s.group(g))
		}
		responsewriters.WriteJSON(w, http.StatusOK, list)
	case len(parts) == 2 && parts[0] == "apis" && s.hasGroup(parts[1]):
		g := s.group(parts[1])
		g.Kind, g.APIVersion = "APIGroup", "v1"
		responsewriters.WriteJSON(w, http.StatusOK, &g)
	case len(parts) == 3 && parts[0] == "apis" && s.hasGroup(parts[1]) && s.group(parts[1]).PreferredVersion.Version == parts[2]:
		responsewriters.WriteJSON(w, http.StatusOK, s.resourceList(parts[1], parts[2]))
	default:
		return false
	}
	return true
}

// groups lists the named API groups served, sorted.
func (s *Server) groups() []string {
	seen := map[string]bool{}
	for _, res := range s.resources {
		if g := res.GVK.Group; g != "" {
			seen[g] = true
		}
	}
	var out []string
	for g := range seen {
		out = append(out, g)
	}
	sort.Strings(out)
	return out
}

func (s *Server) hasGroup(g string) bool {
	for _, x := range s.groups() {
		if x == g {
			return true
		}
	}
	return false
}

func (s *Server) group(name string) metav1.APIGroup {
	var version string
	for _, res := range s.resources {
		if res.GVK.Group == name {
			version = res.GVK.Version
		}
	}
	gv := metav1.GroupVersionForDiscovery{GroupVersion: name + "/" + version, Version: version}
	return metav1.APIGroup{Name: name, Versions: []metav1.GroupVersionForDiscovery{gv}, PreferredVersion: gv}
}

// resourceList is the group-version's resources with their verbs and
// subresources, as kubectl's discovery needs them.
func (s *Server) resourceList(group, version string) *metav1.APIResourceList {
	gv := version
	if group != "" {
		gv = group + "/" + version
	}
	list := &metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: gv}
	var resources []*registry.Resource
	for _, res := range s.resources {
		if res.GVK.Group == group && res.GVK.Version == version {
			resources = append(resources, res)
		}
	}
	sort.Slice(resources, func(i, j int) bool { return resources[i].Plural < resources[j].Plural })
	for _, res := range resources {
		list.APIResources = append(list.APIResources, metav1.APIResource{
			Name: res.Plural, SingularName: res.Singular, Namespaced: res.Namespaced, Kind: res.GVK.Kind,
			Verbs: res.Verbs, ShortNames: res.ShortNames, Categories: res.Categories,
		})
		for _, sub := range res.Subresources {
			list.APIResources = append(list.APIResources, subresourceDiscovery(res, sub))
		}
	}
	return list
}

// subresourceDiscovery describes a subresource with upstream's kind and verbs.
func subresourceDiscovery(res *registry.Resource, sub string) metav1.APIResource {
	r := metav1.APIResource{Name: res.Plural + "/" + sub, Namespaced: res.Namespaced, Kind: res.GVK.Kind}
	switch sub {
	case "status", "ephemeralcontainers", "resize":
		r.Verbs = []string{"get", "patch", "update"}
	case "scale":
		r.Group, r.Version, r.Kind = "autoscaling", "v1", "Scale"
		r.Verbs = []string{"get", "patch", "update"}
	case "binding":
		r.Kind, r.Verbs = "Binding", []string{"create"}
	case "eviction":
		r.Group, r.Version, r.Kind, r.Verbs = "policy", "v1", "Eviction", []string{"create"}
	case "token":
		r.Group, r.Version, r.Kind, r.Verbs = "authentication.k8s.io", "v1", "TokenRequest", []string{"create"}
	case "log":
		r.Kind, r.Verbs = "Pod", []string{"get"}
	case "exec", "attach", "portforward":
		r.Kind, r.Verbs = "PodExecOptions", []string{"create", "get"}
		if sub == "attach" {
			r.Kind = "PodAttachOptions"
		}
		if sub == "portforward" {
			r.Kind = "PodPortForwardOptions"
		}
	case "proxy":
		r.Kind = res.GVK.Kind + "ProxyOptions" // NodeProxyOptions, ServiceProxyOptions
		r.Verbs = []string{"create", "delete", "get", "patch", "update"}
	case "finalize":
		r.Verbs = []string{"update"}
	}
	return r
}
