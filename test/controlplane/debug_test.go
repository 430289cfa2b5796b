package controlplane_test

import (
	"regexp"
	"strings"
	"testing"
)

// debugTarget has the container kubectl debug targets; no node, so
// nothing runs it: the test is about the API object only.
const debugTarget = `apiVersion: v1
kind: Pod
metadata:
  name: target
spec:
  containers:
  - name: c
    image: busybox:1
`

var debugName = regexp.MustCompile(`Defaulting debug container name to (debugger-[a-z0-9]+)\.`)

// TestKubectlDebug is `kubectl debug` without -it: a strategic merge
// patch of pods/ephemeralcontainers adding a container that targets c.
func TestKubectlDebug(t *testing.T) {
	ns := namespace(t)
	mustKubectl(t, "-n", ns, "create", "-f", writeFile(t, "pod.yaml", debugTarget))
	out := mustKubectl(t, "-n", ns, "debug", "target", "--image=localhost/nodeagent/busybox:1", "--target=c", "--", "sleep", "3600")
	if !strings.Contains(out, `Targeting container "c".`) {
		t.Errorf("debug output lacks the target: %q", out)
	}
	m := debugName.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("debug output lacks the container name: %q", out)
	}
	get := func(path string) string {
		return mustKubectl(t, "-n", ns, "get", "pod", "target", "-o", "jsonpath={"+path+"}")
	}
	if got := get(".spec.ephemeralContainers[0].name"); got != m[1] {
		t.Errorf("ephemeral container name %q, want %q", got, m[1])
	}
	if got := get(".spec.ephemeralContainers[0].targetContainerName"); got != "c" {
		t.Errorf("targetContainerName %q, want c", got)
	}
	if got := get(".spec.ephemeralContainers[0].command"); got != `["sleep","3600"]` {
		t.Errorf("command %q", got)
	}
	// A second debug container is added beside the first, never replacing it.
	mustKubectl(t, "-n", ns, "debug", "target", "--image=localhost/nodeagent/busybox:1", "--", "true")
	if got := strings.Fields(get(".spec.ephemeralContainers[*].name")); len(got) != 2 || got[0] != m[1] {
		t.Errorf("after a second debug: %q", got)
	}
	// A target that does not exist is refused with upstream's message.
	_, stderr, err := kubectl(t, "-n", ns, "debug", "target", "--image=localhost/nodeagent/busybox:1", "--target=nope", "--", "true")
	if err == nil || !strings.Contains(stderr, `targetContainerName: Not found: "nope"`) {
		t.Errorf("unknown target: err %v, stderr %q", err, stderr)
	}
}
