package openapi

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"

	openapi_v2 "github.com/google/gnostic-models/openapiv2"
	"google.golang.org/protobuf/proto"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/openapi3"
	"k8s.io/client-go/rest"
	"k8s.io/kube-openapi/pkg/spec3"

	"github.com/nodeagent/nodeagent/pkg/controlplane/registry"
)

// testServer serves the documents of the registry's resources, as the
// API server does, and 404 elsewhere.
var testServer = sync.OnceValue(func() *httptest.Server {
	s := New(registry.New(registry.Config{}).All(), "v1.37.2-test")
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.Serve(w, r) {
			http.NotFound(w, r)
		}
	}))
})

func TestMain(m *testing.M) {
	code := m.Run()
	testServer().Close()
	os.Exit(code)
}

func testClient() *kubernetes.Clientset {
	return kubernetes.NewForConfigOrDie(&rest.Config{Host: testServer().URL})
}

func getOpenAPI(t *testing.T, path, accept string) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, testServer().URL+path, nil)
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s", path, resp.StatusCode, body)
	}
	return resp, body
}

// v3GV fetches a group version's v3 document through the root's URL.
func v3GV(t *testing.T, gv string) map[string]interface{} {
	t.Helper()
	_, body := getOpenAPI(t, "/openapi/v3", "")
	var root struct {
		Paths map[string]struct{ ServerRelativeURL string } `json:"paths"`
	}
	if err := json.Unmarshal(body, &root); err != nil {
		t.Fatal(err)
	}
	url := root.Paths[gv].ServerRelativeURL
	if !strings.HasPrefix(url, "/openapi/v3/"+gv+"?hash=") {
		t.Fatalf("root entry for %s: %q (root %s)", gv, url, body)
	}
	resp, body := getOpenAPI(t, url, "application/json")
	if resp.Header.Get("Etag") == "" {
		t.Error("no ETag")
	}
	var doc map[string]interface{}
	if err := json.Unmarshal(body, &doc); err != nil {
		t.Fatal(err)
	}
	return doc
}

func TestOpenAPIV3Root(t *testing.T) {
	_, body := getOpenAPI(t, "/openapi/v3", "")
	for _, gv := range []string{"api/v1", "apis/apps/v1", "apis/coordination.k8s.io/v1"} {
		if !strings.Contains(string(body), `"`+gv+`"`) {
			t.Errorf("root lacks %s: %s", gv, body)
		}
	}
}

func TestOpenAPIV3PodSchema(t *testing.T) {
	doc := v3GV(t, "api/v1")
	schemas := doc["components"].(map[string]interface{})["schemas"].(map[string]interface{})
	pod, ok := schemas["io.k8s.api.core.v1.Pod"].(map[string]interface{})
	if !ok {
		t.Fatal("no io.k8s.api.core.v1.Pod")
	}
	if pod["description"] != (v1.Pod{}).SwaggerDoc()[""] {
		t.Errorf("Pod description %q", pod["description"])
	}
	gvk, _ := json.Marshal(pod["x-kubernetes-group-version-kind"])
	if string(gvk) != `[{"group":"","kind":"Pod","version":"v1"}]` {
		t.Errorf("Pod GVK %s", gvk)
	}
	props := pod["properties"].(map[string]interface{})
	for field, ref := range map[string]string{"spec": "io.k8s.api.core.v1.PodSpec", "status": "io.k8s.api.core.v1.PodStatus", "metadata": "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"} {
		got, _ := json.Marshal(props[field])
		if !strings.Contains(string(got), `"$ref":"#/components/schemas/`+ref+`"`) {
			t.Errorf("Pod.%s: %s", field, got)
		}
		if schemas[ref] == nil {
			t.Errorf("%s not in the document", ref)
		}
	}
	container := schemas["io.k8s.api.core.v1.Container"].(map[string]interface{})
	if req, _ := json.Marshal(container["required"]); string(req) != `["name"]` {
		t.Errorf("Container required %s", req)
	}
	limits, _ := json.Marshal(schemas["io.k8s.api.core.v1.ResourceRequirements"].(map[string]interface{})["properties"].(map[string]interface{})["limits"])
	if !strings.Contains(string(limits), `"additionalProperties":{"$ref":"#/components/schemas/io.k8s.apimachinery.pkg.api.resource.Quantity"}`) {
		t.Errorf("limits: %s", limits)
	}
	ts, _ := json.Marshal(schemas["io.k8s.apimachinery.pkg.apis.meta.v1.Time"])
	if !strings.Contains(string(ts), `"format":"date-time"`) || !strings.Contains(string(ts), `"type":"string"`) {
		t.Errorf("Time: %s", ts)
	}
	ios, _ := json.Marshal(schemas["io.k8s.apimachinery.pkg.util.intstr.IntOrString"])
	if !strings.Contains(string(ios), `"x-kubernetes-int-or-string":true`) {
		t.Errorf("IntOrString: %s", ios)
	}
}

func TestOpenAPIV3FieldValidationParam(t *testing.T) {
	doc := v3GV(t, "api/v1")
	item := doc["paths"].(map[string]interface{})["/api/v1/namespaces/{namespace}/pods/{name}"].(map[string]interface{})
	patch, _ := json.Marshal(item["patch"])
	for _, want := range []string{`"name":"fieldValidation"`, `"x-kubernetes-action":"patch"`, `"x-kubernetes-group-version-kind":{"group":"","kind":"Pod","version":"v1"}`, `application/strategic-merge-patch+json`} {
		if !strings.Contains(string(patch), want) {
			t.Errorf("pod patch operation lacks %s", want)
		}
	}
	// What kubectl does: client-go's openapi3 root and the spec3 types.
	root := openapi3.NewRoot(testClient().Discovery().OpenAPIV3())
	for _, gvk := range []schema.GroupVersionKind{v1.SchemeGroupVersion.WithKind("Pod"), {Group: "apps", Version: "v1", Kind: "Deployment"}, {Version: "v1", Kind: "Namespace"}} {
		spec, err := root.GVSpec(gvk.GroupVersion())
		if err != nil {
			t.Fatal(err)
		}
		if !patchHasParam(spec, gvk, "fieldValidation") {
			t.Errorf("%v: no PATCH operation with fieldValidation", gvk)
		}
	}
}

func patchHasParam(doc *spec3.OpenAPI, gvk schema.GroupVersionKind, param string) bool {
	for _, p := range doc.Paths.Paths {
		if p == nil || p.Patch == nil {
			continue
		}
		var ext map[string]string
		if err := p.Patch.Extensions.GetObject("x-kubernetes-group-version-kind", &ext); err != nil || ext["kind"] != gvk.Kind || ext["group"] != gvk.Group {
			continue
		}
		for _, prm := range p.Patch.Parameters {
			if prm.Name == param && prm.In == "query" {
				return true
			}
		}
		return false
	}
	return false
}

func TestOpenAPIV2(t *testing.T) {
	_, body := getOpenAPI(t, "/openapi/v2", "application/json")
	var doc struct {
		Swagger     string                            `json:"swagger"`
		Definitions map[string]map[string]interface{} `json:"definitions"`
		Paths       map[string]interface{}            `json:"paths"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Swagger != "2.0" || doc.Definitions["io.k8s.api.core.v1.Pod"] == nil || doc.Definitions["io.k8s.api.apps.v1.Deployment"] == nil {
		t.Fatalf("v2 document: swagger %q, %d definitions", doc.Swagger, len(doc.Definitions))
	}
	spec, _ := json.Marshal(doc.Definitions["io.k8s.api.core.v1.Pod"]["properties"].(map[string]interface{})["spec"])
	if !strings.Contains(string(spec), `"$ref":"#/definitions/io.k8s.api.core.v1.PodSpec"`) {
		t.Errorf("v2 Pod.spec: %s", spec)
	}
	if doc.Paths["/apis/apps/v1/namespaces/{namespace}/deployments/{name}/scale"] == nil {
		t.Error("no deployments/scale path")
	}
	// The protobuf form client-go's discovery client asks for.
	_, pb := getOpenAPI(t, "/openapi/v2", "application/com.github.proto-openapi.spec.v2@v1.0+protobuf")
	var parsed openapi_v2.Document
	if err := proto.Unmarshal(pb, &parsed); err != nil || parsed.GetSwagger() != "2.0" {
		t.Fatalf("protobuf v2: %v %q", err, parsed.GetSwagger())
	}
	if _, err := testClient().Discovery().OpenAPISchema(); err != nil {
		t.Errorf("discovery OpenAPISchema: %v", err)
	}
}

func TestEphemeralContainersOpenAPI(t *testing.T) {
	doc := v3GV(t, "api/v1")
	path, ok := doc["paths"].(map[string]interface{})["/api/v1/namespaces/{namespace}/pods/{name}/ephemeralcontainers"].(map[string]interface{})
	if !ok {
		t.Fatal("no pods/{name}/ephemeralcontainers path")
	}
	// Upstream's operation IDs, which clients generated from the document use.
	for method, id := range map[string]string{"get": "readCoreV1NamespacedPodEphemeralcontainers",
		"put": "replaceCoreV1NamespacedPodEphemeralcontainers", "patch": "patchCoreV1NamespacedPodEphemeralcontainers"} {
		op, _ := path[method].(map[string]interface{})
		if op == nil || op["operationId"] != id {
			t.Errorf("%s: %v, want operationId %s", method, op["operationId"], id)
		}
	}
}
