package openapi

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestOpenAPIDescribesConnectSubresources(t *testing.T) {
	_, body := getOpenAPI(t, "/openapi/v2", "application/json")
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		path, method string
		want         []string
	}{
		{"/api/v1/namespaces/{namespace}/pods/{name}/exec", "get", []string{`"operationId":"connectCoreV1GetNamespacedPodExec"`, `"x-kubernetes-action":"connect"`,
			`"x-kubernetes-group-version-kind":{"group":"","kind":"PodExecOptions","version":"v1"}`, `"schema":{"type":"string"}`}},
		{"/api/v1/namespaces/{namespace}/pods/{name}/exec", "post", []string{`"operationId":"connectCoreV1PostNamespacedPodExec"`}},
		{"/api/v1/namespaces/{namespace}/pods/{name}/attach", "post", []string{`"operationId":"connectCoreV1PostNamespacedPodAttach"`, `"kind":"PodAttachOptions"`}},
		{"/api/v1/namespaces/{namespace}/pods/{name}/portforward", "get", []string{`"operationId":"connectCoreV1GetNamespacedPodPortforward"`}},
		{"/api/v1/namespaces/{namespace}/pods/{name}/log", "get", []string{`"operationId":"readCoreV1NamespacedPodLog"`, `"produces":["text/plain"`, `"kind":"Pod"`}},
		{"/api/v1/nodes/{name}/proxy", "delete", []string{`"operationId":"connectCoreV1DeleteNodeProxy"`, `"kind":"NodeProxyOptions"`}},
		{"/api/v1/nodes/{name}/proxy/{path}", "get", []string{`"operationId":"connectCoreV1GetNodeProxyWithPath"`}},
	}
	for _, tc := range tests {
		op := string(doc.Paths[tc.path][tc.method])
		for _, w := range tc.want {
			if !strings.Contains(op, w) {
				t.Errorf("%s %s lacks %s: %s", tc.method, tc.path, w, op)
			}
		}
	}
	params := string(doc.Paths["/api/v1/namespaces/{namespace}/pods/{name}/exec"]["parameters"])
	for _, name := range []string{"command", "container", "name", "namespace", "stderr", "stdin", "stdout", "tty"} {
		if !strings.Contains(params, `"name":"`+name+`"`) {
			t.Errorf("exec parameters lack %s: %s", name, params)
		}
	}
}
