package controlplane_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nodeagent/nodeagent/pkg/controlplane/server"
)

// labelNamespace labels ns with kubectl and waits until the server's
// namespace cache (which admission reads, as upstream's informers) has
// the change; it returns kubectl's stderr (warnings).
func labelNamespace(t *testing.T, ns string, labels ...string) string {
	t.Helper()
	args := append([]string{"label", "namespace", ns, "--overwrite", "-o", "jsonpath={.metadata.resourceVersion}"}, labels...)
	rv, stderr, err := kubectl(t, args...)
	if err != nil {
		t.Fatalf("kubectl label namespace: %v\n%s", err, stderr)
	}
	mustKubectl(t, "get", "--raw", "/api/v1/namespaces?limit=1&resourceVersionMatch=NotOlderThan&resourceVersion="+rv)
	return stderr
}

// kubectlFails runs kubectl expecting an error and returns its stderr.
func kubectlFails(t *testing.T, kubeconfig string, args ...string) string {
	t.Helper()
	out, stderr, err := kubectlWith(t, kubeconfig, args...)
	if err == nil {
		t.Errorf("kubectl %s succeeded: %s", strings.Join(args, " "), out)
	}
	return stderr
}

// restrictedDetail is what the restricted level asks of a privileged
// container named c, in upstream's words.
func restrictedDetail(c string) string {
	return fmt.Sprintf(`privileged (container %[1]q must not set securityContext.privileged=true), `+
		`allowPrivilegeEscalation != false (container %[1]q must set securityContext.allowPrivilegeEscalation=false), `+
		`unrestricted capabilities (container %[1]q must set securityContext.capabilities.drop=["ALL"]), `+
		`runAsNonRoot != true (pod or container %[1]q must set securityContext.runAsNonRoot=true), `+
		`seccompProfile (pod or container %[1]q must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")`, c)
}

func TestPodSecurityEnforce(t *testing.T) {
	ns := namespace(t)
	labelNamespace(t, ns, "pod-security.kubernetes.io/enforce=restricted")
	stderr := kubectlFails(t, adminConfig, "-n", ns, "run", "priv", "--image=busybox:1", "--privileged")
	want := `Error from server (Forbidden): pods "priv" is forbidden: violates PodSecurity "restricted:latest": ` + restrictedDetail("priv") + "\n"
	if stderr != want {
		t.Errorf("privileged pod:\n got %q\nwant %q", stderr, want)
	}

	// A level that is not one is refused; the namespace keeps its labels.
	stderr = kubectlFails(t, adminConfig, "label", "namespace", ns, "--overwrite", "pod-security.kubernetes.io/enforce=strict")
	want = `The Namespace "` + ns + `" is invalid: metadata.labels[pod-security.kubernetes.io/enforce]: Invalid value: "strict": must be one of privileged, baseline, restricted` + "\n"
	if stderr != want {
		t.Errorf("bad level:\n got %q\nwant %q", stderr, want)
	}
}

func TestPodSecurityBaseline(t *testing.T) {
	ns := namespace(t)
	labelNamespace(t, ns, "pod-security.kubernetes.io/enforce=baseline")
	if out := mustKubectl(t, "-n", ns, "run", "plain", "--image=busybox:1"); out != "pod/plain created\n" {
		t.Errorf("plain pod: %q", out)
	}
	stderr := kubectlFails(t, adminConfig, "-n", ns, "run", "priv", "--image=busybox:1", "--privileged")
	want := `Error from server (Forbidden): pods "priv" is forbidden: violates PodSecurity "baseline:latest": privileged (container "priv" must not set securityContext.privileged=true)` + "\n"
	if stderr != want {
		t.Errorf("privileged pod:\n got %q\nwant %q", stderr, want)
	}
}

func TestPodSecurityWarn(t *testing.T) {
	ns := namespace(t)
	labelNamespace(t, ns, "pod-security.kubernetes.io/warn=restricted")
	out, stderr, err := kubectl(t, "-n", ns, "run", "priv", "--image=busybox:1", "--privileged")
	want := `Warning: would violate PodSecurity "restricted:latest": ` + restrictedDetail("priv") + "\n"
	if err != nil || out != "pod/priv created\n" || stderr != want {
		t.Errorf("privileged pod: err=%v out=%q\n got %q\nwant %q", err, out, stderr, want)
	}

	// Enforcing a level the pod breaks warns about it.
	stderr = labelNamespace(t, ns, "pod-security.kubernetes.io/enforce=baseline")
	want = `Warning: existing pods in namespace "` + ns + `" violate the new PodSecurity enforce level "baseline:latest"` + "\n" +
		"Warning: priv: privileged\n"
	if stderr != want {
		t.Errorf("enforce with a violating pod:\n got %q\nwant %q", stderr, want)
	}
}

// nodeManifest is a Node no pod lands on (no agent runs for it).
func nodeManifest(name string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Node
metadata:
  name: %s
  labels:
    kubernetes.io/hostname: %s
spec:
  unschedulable: true
`, name, name)
}

// nodeKubeconfig mints a credential for node on the shared server.
func nodeKubeconfig(t *testing.T, node string) string {
	t.Helper()
	url, _ := serverAndCA(t)
	path := filepath.Join(t.TempDir(), node+".kubeconfig")
	if err := server.WriteNodeKubeconfig(shared.cfg.DataDir, node, url, path); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestNodeRestriction(t *testing.T) {
	const self, other = "e2e-nr-self", "e2e-nr-other"
	ns := namespace(t)
	nodeConfig := nodeKubeconfig(t, self)
	t.Cleanup(func() { _, _, _ = kubectl(t, "delete", "node", self, other, "--ignore-not-found") })
	mustKubectl(t, "create", "-f", writeFile(t, "other.yaml", nodeManifest(other)))
	out, stderr, err := kubectlWith(t, nodeConfig, "create", "-f", writeFile(t, "self.yaml", nodeManifest(self)))
	if err != nil || out != "node/"+self+" created\n" {
		t.Fatalf("node registers itself: err=%v out=%q stderr=%q", err, out, stderr)
	}

	cases := []struct {
		name string
		args []string
		want string
	}{
		{"a pod that is not a mirror pod", []string{"-n", ns, "run", "p", "--image=busybox:1"},
			`pods "p" is forbidden: pod does not have "kubernetes.io/config.mirror" annotation, node "` + self + `" can only create mirror pods`},
		{"a node-restriction label on itself", []string{"label", "node", self, "node-restriction.kubernetes.io/x=y"},
			`nodes "` + self + `" is forbidden: is not allowed to modify labels: node-restriction.kubernetes.io/x`},
		{"a taint on itself", []string{"taint", "node", self, "k=v:NoSchedule"},
			`nodes "` + self + `" is forbidden: node "` + self + `" is not allowed to modify taints`},
		{"another node", []string{"label", "node", other, "x=y"},
			`nodes "` + other + `" is forbidden: node "` + self + `" is not allowed to modify node "` + other + `"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := kubectlFails(t, nodeConfig, tc.args...); got != "Error from server (Forbidden): "+tc.want+"\n" {
				t.Errorf("stderr:\n got %q\nwant %q", got, "Error from server (Forbidden): "+tc.want+"\n")
			}
		})
	}
	// Labels outside the reserved domains are the node's own business.
	if out, stderr, err := kubectlWith(t, nodeConfig, "label", "node", self, "example.com/rack=r1"); err != nil || out != "node/"+self+" labeled\n" {
		t.Errorf("label itself: err=%v out=%q stderr=%q", err, out, stderr)
	}
}
