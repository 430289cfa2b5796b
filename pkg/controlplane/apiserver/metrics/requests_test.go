package metrics

import (
	"net/http/httptest"
	"testing"

	"github.com/nodeagent/nodeagent/pkg/controlplane/apiserver/request"
)

// namespacedResources are the resources of TestRequestMetricLabels: whether
// each is namespaced.
var namespacedResources = map[string]bool{"pods": true, "deployments": true, "nodes": false, "namespaces": false}

func TestRequestMetricLabels(t *testing.T) {
	for _, tc := range []struct {
		method, target, contentType string
		want                        Labels
	}{
		{"POST", "/api/v1/namespaces/ns/pods", "", Labels{Verb: "POST", Version: "v1", Resource: "pods", Scope: "resource"}},
		{"GET", "/api/v1/namespaces/ns/pods", "", Labels{Verb: "LIST", Version: "v1", Resource: "pods", Scope: "namespace"}},
		{"GET", "/api/v1/pods", "", Labels{Verb: "LIST", Version: "v1", Resource: "pods", Scope: "cluster"}},
		{"GET", "/api/v1/namespaces/ns/pods/p", "", Labels{Verb: "GET", Version: "v1", Resource: "pods", Scope: "resource"}},
		{"HEAD", "/api/v1/namespaces/ns/pods/p", "", Labels{Verb: "GET", Version: "v1", Resource: "pods", Scope: "resource"}},
		{"GET", "/api/v1/namespaces/ns/pods?watch=true", "", Labels{Verb: "WATCH", Version: "v1", Resource: "pods", Scope: "namespace"}},
		{"GET", "/api/v1/nodes?watch=1", "", Labels{Verb: "WATCH", Version: "v1", Resource: "nodes", Scope: "cluster"}},
		{"GET", "/api/v1/namespaces/ns", "", Labels{Verb: "GET", Version: "v1", Resource: "namespaces", Scope: "resource"}},
		{"PUT", "/api/v1/namespaces/ns/pods/p/status", "", Labels{Verb: "PUT", Version: "v1", Resource: "pods", Subresource: "status", Scope: "resource"}},
		{"PATCH", "/apis/apps/v1/namespaces/ns/deployments/d", "application/apply-patch+yaml", Labels{Verb: "APPLY", Group: "apps", Version: "v1", Resource: "deployments", Scope: "resource"}},
		{"PATCH", "/apis/apps/v1/namespaces/ns/deployments/d", "application/merge-patch+json", Labels{Verb: "PATCH", Group: "apps", Version: "v1", Resource: "deployments", Scope: "resource"}},
		{"DELETE", "/api/v1/namespaces/ns/pods", "", Labels{Verb: "DELETE", Version: "v1", Resource: "pods", Scope: "namespace"}},
		{"GET", "/api/v1/namespaces/ns/pods/p/log", "", Labels{Verb: "CONNECT", Version: "v1", Resource: "pods", Subresource: "log", Scope: "resource"}},
		{"POST", "/api/v1/namespaces/ns/pods/p/exec?command=ls", "", Labels{Verb: "CONNECT", Version: "v1", Resource: "pods", Subresource: "exec", Scope: "resource"}},
		{"GET", "/api/v1/nodes/n1/proxy/metrics", "", Labels{Verb: "CONNECT", Version: "v1", Resource: "nodes", Subresource: "proxy", Scope: "resource"}},
		{"POST", "/api/v1/namespaces/ns/pods?dryRun=All&dryRun=All", "", Labels{Verb: "POST", DryRun: "All", Version: "v1", Resource: "pods", Scope: "resource"}},
		{"POST", "/api/v1/namespaces/ns/pods?dryRun=yes", "", Labels{Verb: "POST", DryRun: "invalid", Version: "v1", Resource: "pods", Scope: "resource"}},
		{"GET", "/apis/metrics.k8s.io/v1beta1/namespaces/ns/pods", "", Labels{Verb: "LIST", Group: "metrics.k8s.io", Version: "v1beta1", Resource: "pods", Scope: "namespace"}},
	} {
		t.Run(tc.method+" "+tc.target, func(t *testing.T) {
			r := httptest.NewRequest(tc.method, tc.target, nil)
			r.Header.Set("Content-Type", tc.contentType)
			watch := r.URL.Query().Get("watch") == "true" || r.URL.Query().Get("watch") == "1"
			ri, ok := request.ParseResourcePath(r.Method, r.URL.Path, watch)
			namespaced, known := namespacedResources[ri.Resource]
			if !ok || !known {
				t.Fatalf("not a resource of the test: %+v", ri)
			}
			tc.want.Component = "apiserver"
			if got := ResourceLabels(r, namespaced, ri); got != tc.want {
				t.Errorf("got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}
