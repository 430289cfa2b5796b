package file

import (
	"regexp"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/nodeagent/nodeagent/pkg/podsource"
	"github.com/nodeagent/nodeagent/pkg/podutil"
)

const node = "node-1"

func podYAML(name, image string) string {
	return "apiVersion: v1\nkind: Pod\nmetadata:\n  name: " + name +
		"\nspec:\n  containers:\n  - name: c\n    image: " + image + "\n"
}

const podJSON = `{
  "apiVersion": "v1",
  "kind": "Pod",
  "metadata": {"name": "web", "namespace": "kube-system"},
  "spec": {"containers": [{"name": "c", "image": "nginx:1.27"}]}
}`

func TestParseManifest(t *testing.T) {
	tests := []struct {
		name      string
		data      string
		wantNames []string // namespace/name
		wantErr   []string // substrings of the error
	}{
		{name: "yaml", data: podYAML("web", "nginx:1.27"), wantNames: []string{"default/web-node-1"}},
		{name: "json", data: podJSON, wantNames: []string{"kube-system/web-node-1"}},
		{
			name:      "multi-doc with empty and comment-only documents",
			data:      "---\n" + podYAML("a", "busybox") + "---\n# nothing\n---\n" + podYAML("b", "busybox") + "---\n",
			wantNames: []string{"default/a-node-1", "default/b-node-1"},
		},
		{
			name:      "unknown fields are ignored",
			data:      podYAML("web", "nginx") + "  bogusField: 1\n",
			wantNames: []string{"default/web-node-1"},
		},
		{name: "empty file", data: "\n# only a comment\n"},
		{
			name:    "other kind",
			data:    podYAML("a", "busybox") + "---\napiVersion: apps/v1\nkind: Deployment\n",
			wantErr: []string{"m.yaml: document 2 (line 10)", `kind="Deployment"`},
		},
		{
			name:    "yaml syntax error reports the file line",
			data:    podYAML("a", "busybox") + "---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: [b\n",
			wantErr: []string{"document 2 (line 10)", "invalid YAML", "line 13"},
		},
		{
			name:    "json syntax error reports the line",
			data:    "{\n  \"apiVersion\": \"v1\",\n  \"kind\": \"Pod\"\n  \"metadata\": {}\n}\n",
			wantErr: []string{"document 1 (line 1)", "invalid JSON at line 4"},
		},
		{
			name:    "wrong type",
			data:    "apiVersion: v1\nkind: Pod\nmetadata:\n  name: [x]\n",
			wantErr: []string{"document 1", "cannot decode Pod"},
		},
		{
			name:    "missing name",
			data:    "apiVersion: v1\nkind: Pod\nspec:\n  containers:\n  - name: c\n    image: busybox\n",
			wantErr: []string{"document 1", "metadata.name: Required value"},
		},
		{
			name:    "validation error",
			data:    "apiVersion: v1\nkind: Pod\nmetadata:\n  name: bad\nspec:\n  containers:\n  - name: Bad_Name\n",
			wantErr: []string{"m.yaml: document 1 (line 1)", `pod "bad" is invalid`, "spec.containers"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pods, err := parseManifest("/etc/manifests/m.yaml", node, []byte(tt.data))
			if len(tt.wantErr) > 0 {
				if err == nil {
					t.Fatalf("want error, got pods %v", names(pods))
				}
				for _, want := range tt.wantErr {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("error %q does not contain %q", err, want)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if got := names(pods); strings.Join(got, ",") != strings.Join(tt.wantNames, ",") {
				t.Errorf("pods = %v, want %v", got, tt.wantNames)
			}
		})
	}
}

func names(pods []*v1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Namespace+"/"+p.Name)
	}
	return out
}

func parseOne(t *testing.T, path, nodeName, data string) *v1.Pod {
	t.Helper()
	pods, err := parseManifest(path, nodeName, []byte(data))
	if err != nil || len(pods) != 1 {
		t.Fatalf("parseManifest: %d pods, err %v", len(pods), err)
	}
	return pods[0]
}

func TestDefaultsApplied(t *testing.T) {
	pod := parseOne(t, "/m/web.yaml", node, podYAML("web", "nginx"))
	if pod.Spec.NodeName != node {
		t.Errorf("spec.nodeName = %q, want %q", pod.Spec.NodeName, node)
	}
	if pod.Status.Phase != v1.PodPending {
		t.Errorf("phase = %q, want Pending", pod.Status.Phase)
	}
	if !regexp.MustCompile(`^[0-9a-f]{32}$`).MatchString(string(pod.UID)) {
		t.Errorf("UID %q is not 32 hex characters", pod.UID)
	}
	want := map[string]string{podutil.ConfigSourceAnnotation: "file", podutil.ConfigHashAnnotation: string(pod.UID)}
	for k, v := range want {
		if pod.Annotations[k] != v {
			t.Errorf("annotation %s = %q, want %q", k, pod.Annotations[k], v)
		}
	}
	if len(pod.Annotations[podsource.ContentHashAnnotation]) != 64 {
		t.Errorf("content hash %q is not a sha256 hex", pod.Annotations[podsource.ContentHashAnnotation])
	}
	tol := pod.Spec.Tolerations
	if len(tol) != 1 || tol[0].Operator != v1.TolerationOpExists || tol[0].Effect != v1.TaintEffectNoExecute {
		t.Errorf("tolerations = %+v, want the NoExecute/Exists toleration", tol)
	}
	if pod.Spec.Containers[0].ImagePullPolicy == "" {
		t.Errorf("podspec defaults were not applied (imagePullPolicy empty)")
	}
}

func TestUID(t *testing.T) {
	base := parseOne(t, "/m/web.yaml", node, podYAML("web", "nginx:1"))
	tests := []struct {
		name, path, node, data string
		sameUID, sameContent   bool
	}{
		{"content change keeps UID", "/m/web.yaml", node, podYAML("web", "nginx:2"), true, false},
		{"same content is identical", "/m/web.yaml", node, podYAML("web", "nginx:1"), true, true},
		{"explicit default namespace", "/m/web.yaml", node, strings.Replace(podYAML("web", "nginx:1"), "name: web", "name: web\n  namespace: default", 1), true, true},
		{"other file", "/m/web2.yaml", node, podYAML("web", "nginx:1"), false, false},
		{"other node", "/m/web.yaml", "node-2", podYAML("web", "nginx:1"), false, false},
		{"other name", "/m/web.yaml", node, podYAML("api", "nginx:1"), false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := parseOne(t, tt.path, tt.node, tt.data)
			if (pod.UID == base.UID) != tt.sameUID {
				t.Errorf("UID %q vs base %q: same=%v, want %v", pod.UID, base.UID, pod.UID == base.UID, tt.sameUID)
			}
			same := pod.Annotations[podsource.ContentHashAnnotation] == base.Annotations[podsource.ContentHashAnnotation]
			if same != tt.sameContent {
				t.Errorf("content hash same=%v, want %v", same, tt.sameContent)
			}
		})
	}
}

func TestSplitDocuments(t *testing.T) {
	docs := splitDocuments([]byte("---\na: 1\n--- \n\n---\nb: 2\n---x: 3\n"))
	if len(docs) != 2 {
		t.Fatalf("got %d documents, want 2", len(docs))
	}
	if docs[0].line != 2 || docs[1].line != 6 || docs[1].index != 2 {
		t.Errorf("documents = %+v", docs)
	}
	if string(docs[1].data) != "b: 2\n---x: 3\n" {
		t.Errorf("second document = %q", docs[1].data)
	}
}
