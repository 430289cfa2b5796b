package apiserver

import (
	"bytes"
	"encoding/json"
	"net/http"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// FuzzRequestDecoding sends arbitrary bodies through create, update and
// the three patch types: the server must never fail with a 5xx, and must
// always answer with a Status or an object.
//
//	go test ./pkg/controlplane/apiserver -run XXX -fuzz FuzzRequestDecoding -fuzztime 60s
func FuzzRequestDecoding(f *testing.F) {
	for _, seed := range []string{
		`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"f"},"spec":{"containers":[{"name":"c","image":"i"}]}}`,
		`{"apiVersion":"v1","kind":"Pod","metadata":{"generateName":"g-"},"spec":{"containers":[]}}`,
		`{"kind":"Service","apiVersion":"v1"}`,
		`[{"op":"replace","path":"/spec/containers/0/image","value":"x"}]`,
		`{"metadata":{"labels":{"a":null}}}`,
		`{"spec":{"containers":[{"$patch":"delete","name":"c"}]}}`,
		`k8s` + "\x00\x0a\x02v1",
		`{"metadata":{"name":"` + string(bytes.Repeat([]byte("a"), 300)) + `"}}`,
		``, `null`, `{`, `"x"`, `{"spec":{"containers":[{"ports":[{"containerPort":-1}]}]}}`,
	} {
		f.Add([]byte(seed), uint8(0))
	}
	f.Fuzz(func(t *testing.T, body []byte, mode uint8) {
		ns := "default"
		method, path, ctype := http.MethodPost, "/api/v1/namespaces/"+ns+"/pods", "application/json"
		switch mode % 6 {
		case 1:
			method, path = http.MethodPut, path+"/fuzz-target"
		case 2:
			method, path, ctype = http.MethodPatch, path+"/fuzz-target", "application/merge-patch+json"
		case 3:
			method, path, ctype = http.MethodPatch, path+"/fuzz-target", "application/json-patch+json"
		case 4:
			method, path, ctype = http.MethodPatch, path+"/fuzz-target", "application/strategic-merge-patch+json"
		case 5:
			ctype = protobufType
		}
		req, err := http.NewRequest(method, baseURL+path, bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", ctype)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]interface{}
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
			t.Fatalf("%s %s: answer is not JSON: %v", method, path, err)
		}
		if resp.StatusCode >= 500 {
			t.Fatalf("%s %s with %q: %d %v", method, path, body, resp.StatusCode, out)
		}
		if resp.StatusCode >= 300 && out["kind"] != "Status" {
			t.Fatalf("error %d without a Status: %v", resp.StatusCode, out)
		}
		if resp.StatusCode == http.StatusCreated || resp.StatusCode == http.StatusOK {
			// Remove what the fuzzer created so the namespace stays small.
			if md, ok := out["metadata"].(map[string]interface{}); ok {
				if name, ok := md["name"].(string); ok && name != "fuzz-target" {
					_ = client.CoreV1().Pods(ns).Delete(t.Context(), name, metav1.DeleteOptions{})
				}
			}
		}
	})
}
