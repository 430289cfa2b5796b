package controlplane_test

import (
	"encoding/json"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

const podManifest = `apiVersion: v1
kind: Pod
metadata:
  name: p
  labels:
    app: demo
spec:
  nodeName: fake-node
  containers:
  - name: c
    image: busybox:1
`

// runPod creates a pod with `kubectl run`, bound to a node that does not
// exist when node is set (no agent runs, so it stays Pending).
func runPod(t *testing.T, ns, name, node string) {
	t.Helper()
	args := []string{"-n", ns, "run", name, "--image=busybox:1"}
	if node != "" {
		args = append(args, `--overrides={"spec":{"nodeName":"`+node+`"}}`)
	}
	if out := mustKubectl(t, args...); out != "pod/"+name+" created\n" {
		t.Fatalf("kubectl run: got %q", out)
	}
}

func TestNamespaces(t *testing.T) {
	ns := namespace(t)
	got := map[string]string{}
	for _, r := range rows(mustKubectl(t, "get", "namespaces"))[1:] {
		got[r[0]] = r[1]
	}
	checkRow(t, "header", rows(mustKubectl(t, "get", "ns"))[0], []string{"NAME", "STATUS", "AGE"})
	for _, name := range []string{"default", "kube-system", "kube-public", "kube-node-lease", ns} {
		if got[name] != "Active" {
			t.Errorf("namespace %s: STATUS %q, want Active", name, got[name])
		}
	}
}

// TestPodManifest is `kubectl create -f` and `kubectl apply -f` with
// default (strict) validation, which needs the server's OpenAPI.
func TestPodManifest(t *testing.T) {
	ns := namespace(t)
	file := writeFile(t, "pod.yaml", podManifest)
	if out := mustKubectl(t, "-n", ns, "create", "-f", file); out != "pod/p created\n" {
		t.Errorf("create -f: got %q", out)
	}
	if out := mustKubectl(t, "-n", ns, "apply", "-f", file); out != "pod/p configured\n" {
		t.Errorf("first apply -f: got %q, want pod/p configured", out)
	}
	if out := mustKubectl(t, "-n", ns, "apply", "-f", file); out != "pod/p unchanged\n" {
		t.Errorf("second apply -f: got %q, want pod/p unchanged", out)
	}
	if out := mustKubectl(t, "-n", ns, "get", "pod", "p", "-o", "jsonpath={.metadata.labels.app}"); out != "demo" {
		t.Errorf("label app: got %q", out)
	}
	mustKubectl(t, "-n", ns, "delete", "pod", "p", "--grace-period=0", "--force")
}

func TestPodInvalid(t *testing.T) {
	ns := namespace(t)
	bad := writeFile(t, "bad.yaml", `apiVersion: v1
kind: Pod
metadata:
  name: Bad_Name
spec:
  containers:
  - name: c
`)
	want := `The Pod "Bad_Name" is invalid: ` + "\n" +
		`* metadata.name: Invalid value: "Bad_Name": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')` + "\n" +
		`* spec.containers[0].image: Required value` + "\n"
	if _, stderr, err := kubectl(t, "-n", ns, "create", "-f", bad); err == nil || stderr != want {
		t.Errorf("create -f invalid pod: err=%v\nstderr: %q\nwant:   %q", err, stderr, want)
	}
}

func TestMissingNamespace(t *testing.T) {
	out, stderr, err := kubectl(t, "get", "pods", "-n", "nope")
	if err != nil || out != "" || stderr != "No resources found in nope namespace.\n" {
		t.Errorf("get pods -n nope: err=%v stdout=%q stderr=%q", err, out, stderr)
	}
	file := writeFile(t, "pod.yaml", podManifest)
	_, stderr, err = kubectl(t, "create", "-f", file, "-n", "nope")
	want := `Error from server (NotFound): error when creating "` + file + `": namespaces "nope" not found` + "\n"
	if err == nil || stderr != want {
		t.Errorf("create -f -n nope: err=%v\nstderr: %q\nwant:   %q", err, stderr, want)
	}
}

func TestPodGet(t *testing.T) {
	ns := namespace(t)
	runPod(t, ns, "p", "fake-node")
	defer mustKubectl(t, "-n", ns, "delete", "pod", "p", "--grace-period=0", "--force")

	table := rows(mustKubectl(t, "-n", ns, "get", "pods"))
	checkRow(t, "get pods header", table[0], []string{"NAME", "READY", "STATUS", "RESTARTS", "AGE"})
	checkRow(t, "get pods row", table[1], []string{"p", "0/1", "Pending", "0", "*"})

	wide := rows(mustKubectl(t, "-n", ns, "get", "pods", "-o", "wide"))
	checkRow(t, "wide header", wide[0], []string{"NAME", "READY", "STATUS", "RESTARTS", "AGE", "IP", "NODE", "NOMINATED NODE", "READINESS GATES"})
	checkRow(t, "wide row", wide[1], []string{"p", "0/1", "Pending", "0", "*", "<none>", "fake-node", "<none>", "<none>"})

	var pod corev1.Pod
	if err := json.Unmarshal([]byte(mustKubectl(t, "-n", ns, "get", "pod", "p", "-o", "json")), &pod); err != nil {
		t.Errorf("-o json: %v", err)
	} else if pod.Kind != "Pod" || pod.Name != "p" || pod.Namespace != ns || pod.Spec.NodeName != "fake-node" {
		t.Errorf("-o json: kind %q name %q namespace %q node %q", pod.Kind, pod.Name, pod.Namespace, pod.Spec.NodeName)
	}
	yaml := mustKubectl(t, "-n", ns, "get", "pod", "p", "-o", "yaml")
	for _, s := range []string{"apiVersion: v1\n", "kind: Pod\n", "  name: p\n", "  nodeName: fake-node\n", "  - image: busybox:1\n"} {
		if !strings.Contains(yaml, s) {
			t.Errorf("-o yaml lacks %q", s)
		}
	}
	if out := mustKubectl(t, "-n", ns, "get", "pod", "p", "-o", "jsonpath={.spec.containers[0].image}"); out != "busybox:1" {
		t.Errorf("jsonpath image: got %q", out)
	}
	if out := mustKubectl(t, "-n", ns, "get", "pods", "-o", "name"); out != "pod/p\n" {
		t.Errorf("-o name: got %q", out)
	}
	desc := mustKubectl(t, "-n", ns, "describe", "pod", "p")
	for _, s := range []string{"Name:", "Namespace:", "Containers:", "Image:", "Node:             fake-node/", "Namespace:        " + ns + "\n", "    Image:        busybox:1\n"} {
		if !strings.Contains(desc, s) {
			t.Errorf("describe pod lacks %q", s)
		}
	}
}

func TestPodMetadataAndPatch(t *testing.T) {
	ns := namespace(t)
	runPod(t, ns, "p", "")
	runPod(t, ns, "q", "")
	if out := mustKubectl(t, "-n", ns, "label", "pod", "p", "tier=web"); out != "pod/p labeled\n" {
		t.Errorf("label: got %q", out)
	}
	if out := mustKubectl(t, "-n", ns, "get", "pods", "-l", "tier=web", "-o", "name"); out != "pod/p\n" {
		t.Errorf("get -l tier=web: got %q", out)
	}
	if out := mustKubectl(t, "-n", ns, "annotate", "pod", "p", "note=hello"); out != "pod/p annotated\n" {
		t.Errorf("annotate: got %q", out)
	}
	patches := []struct{ typ, patch, label string }{
		{"merge", `{"metadata":{"labels":{"m":"1"}}}`, "m"},
		{"json", `[{"op":"add","path":"/metadata/labels/j","value":"1"}]`, "j"},
		{"strategic", `{"metadata":{"labels":{"s":"1"}}}`, "s"},
	}
	for _, p := range patches {
		if out := mustKubectl(t, "-n", ns, "patch", "pod", "p", "--type", p.typ, "-p", p.patch); out != "pod/p patched\n" {
			t.Errorf("patch --type %s: got %q", p.typ, out)
		}
	}
	if out := mustKubectl(t, "-n", ns, "patch", "pod", "p", "-p", patches[2].patch); out != "pod/p patched (no change)\n" {
		t.Errorf("repeated patch: got %q", out)
	}
	out := mustKubectl(t, "-n", ns, "get", "pod", "p", "-o", "jsonpath={.metadata.labels.tier} {.metadata.labels.m}{.metadata.labels.j}{.metadata.labels.s} {.metadata.annotations.note}")
	if out != "web 111 hello" {
		t.Errorf("labels and annotation after patches: got %q", out)
	}
	// An unbound pod goes at once.
	if out := mustKubectl(t, "-n", ns, "delete", "pod", "p"); out != `pod "p" deleted from `+ns+" namespace\n" {
		t.Errorf("delete pod: got %q", out)
	}
	if out := mustKubectl(t, "-n", ns, "get", "pods", "-o", "name"); out != "pod/q\n" {
		t.Errorf("pods after delete: got %q", out)
	}
}

func TestPodGracefulDelete(t *testing.T) {
	ns := namespace(t)
	runPod(t, ns, "b", "fake-node")
	if out := mustKubectl(t, "-n", ns, "delete", "pod", "b", "--wait=false"); out != `pod "b" deleted from `+ns+" namespace\n" {
		t.Errorf("delete --wait=false: got %q", out)
	}
	// Bound: the (absent) agent must confirm, so the pod stays.
	out := mustKubectl(t, "-n", ns, "get", "pod", "b", "-o", "jsonpath={.metadata.deletionTimestamp} {.metadata.deletionGracePeriodSeconds}")
	if ts, grace, _ := strings.Cut(out, " "); ts == "" || grace != "30" {
		t.Errorf("bound pod after delete: deletionTimestamp %q deletionGracePeriodSeconds %q (want set, 30)", ts, grace)
	}
	if row := rows(mustKubectl(t, "-n", ns, "get", "pod", "b")); len(row) < 2 || row[1][2] != "Terminating" {
		t.Errorf("STATUS of a deleted bound pod: got %q, want Terminating", row)
	}
	out, stderr, err := kubectl(t, "-n", ns, "delete", "pod", "b", "--grace-period=0", "--force")
	if err != nil || out != `pod "b" force deleted from `+ns+" namespace\n" ||
		!strings.Contains(stderr, "Warning: Immediate deletion does not wait for confirmation") {
		t.Errorf("force delete: err=%v stdout=%q stderr=%q", err, out, stderr)
	}
	if out, stderr, err := kubectl(t, "-n", ns, "get", "pod", "b"); err == nil || stderr != `Error from server (NotFound): pods "b" not found`+"\n" {
		t.Errorf("get after force delete: err=%v stdout=%q stderr=%q", err, out, stderr)
	}
}
