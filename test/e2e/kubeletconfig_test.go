package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nodeagent/nodeagent/test/framework"
)

// A kubelet's config file with fields the agent does not implement, and a
// --config-dir drop-in over it: the agent starts, logs one warning per
// unimplemented field and upstream's lenient-decoding warning for an
// unknown one, and runs the static pods of the drop-in's staticPodPath.
func TestKubeletConfigCompat(t *testing.T) {
	dropins, manifests := t.TempDir(), t.TempDir()
	dropin := filepath.Join(dropins, "10-node.conf")
	if err := os.WriteFile(dropin, []byte(fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
staticPodPath: %s
logging:
  verbosity: 2
`, manifests)), 0o644); err != nil {
		t.Fatal(err)
	}
	a := newAgentArgs(t, "hairpinMode: hairpin-veth\nnoSuchField: 1\n", "--config-dir", dropins)
	manifest := filepath.Join(manifests, "dropin.yaml")
	t.Cleanup(func() { os.Remove(manifest) }) // runs before newAgent's cleanup waits for the pods to go
	if err := os.WriteFile(manifest, []byte(fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: dropin}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: c
    image: %s
    command: ["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 1; done"]
`, framework.BusyboxImage)), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := a.WaitPod("dropin", podTimeout, running); err != nil {
		t.Fatalf("the drop-in's staticPodPath: %v", err)
	}
	for _, want := range [][]string{
		{"config file ", `field \"hairpinMode\" of kubelet.config.k8s.io/v1beta1 KubeletConfiguration is not implemented by nodeagent and is ignored`},
		{"drop-in config file " + dropin, `field \"logging\" of kubelet.config.k8s.io/v1beta1 KubeletConfiguration is not implemented by nodeagent and is ignored`},
		{"config file ", `using lenient decoding as strict decoding failed: strict decoding error: unknown field \"noSuchField\"`},
	} {
		if !logHasLine(a.Logs(), append([]string{"level=WARN"}, want...)...) {
			t.Errorf("no WARN line in the agent log with %q", want)
		}
	}
}

// logHasLine reports whether one line of logs holds every part.
func logHasLine(logs string, parts ...string) bool {
	for _, line := range strings.Split(logs, "\n") {
		found := true
		for _, p := range parts {
			found = found && strings.Contains(line, p)
		}
		if found {
			return true
		}
	}
	return false
}
