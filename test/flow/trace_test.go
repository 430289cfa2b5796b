package flow

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nodeagent/nodeagent/pkg/controlplane/server"
	"github.com/nodeagent/nodeagent/test/framework"
)

// nodeagentTrace runs `nodeagent trace pod NAME` as the admin.
func nodeagentTrace(t *testing.T, name string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), apiTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, agentBin, "trace", "pod", name, "-n", "default",
		"--kubeconfig", filepath.Join(dataDir, server.KubeconfigFile))
	cmd.Env = []string{"HOME=" + kubectlHome, "PATH=" + os.Getenv("PATH")}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestTracePod starts a pod with a volume, an init container, a postStart
// hook and a readiness probe, and checks that `nodeagent trace pod` shows
// each step of its start in order, and that the node API path the trace
// comes from refuses strangers.
func TestTracePod(t *testing.T) {
	a := newAgent(t)
	waitSchedulable(t)
	deleteOnCleanup(t, "pod/traced")
	mustKubectl(t, "apply", "-f", writeTemp(t, "traced.yaml", `apiVersion: v1
kind: Pod
metadata: {name: traced}
spec:
  terminationGracePeriodSeconds: 2
  volumes:
  - name: scratch
    emptyDir: {}
  initContainers:
  - name: prepare
    image: `+framework.BusyboxImage+`
    command: ["sh", "-c", "echo ok > /scratch/ready"]
    volumeMounts: [{name: scratch, mountPath: /scratch}]
  containers:
  - name: app
    image: `+framework.BusyboxImage+`
    command: ["sh", "-c", "trap 'exit 0' TERM; sleep 3600 & wait"]
    volumeMounts: [{name: scratch, mountPath: /scratch}]
    lifecycle:
      postStart:
        exec: {command: ["sh", "-c", "true"]}
    readinessProbe:
      exec: {command: ["cat", "/scratch/ready"]}
      periodSeconds: 1
`))
	waitPodRunning(t, "traced")
	var out string
	waitFor(t, apiTimeout, "the trace to show the Ready status in the API", func() (bool, error) {
		var err error
		out, err = nodeagentTrace(t, "traced")
		return err == nil && strings.Contains(out, "status Running, Ready=True in the API"), fmt.Errorf("%v: %s", err, out)
	})
	want := []string{
		"Created", "Seen", "Admit", `SetUpVolume`, "RunPodSandbox",
		"PullImage prepare", "CreateContainer prepare", "StartContainer prepare", "InitContainerRun prepare",
		"PullImage app", "CreateContainer app", "StartContainer app", "PostStartHook app",
		"ContainerReady app", "StatusWritten",
	}
	rest := out
	for _, w := range want {
		i := strings.Index(rest, w)
		if i < 0 {
			t.Fatalf("trace lacks %q after the steps before it:\n%s", w, out)
		}
		rest = rest[i+len(w):]
	}
	// PodScheduled is kept to the second: its place among the agent's
	// steps depends on where the second boundary falls.
	for _, w := range []string{"PodScheduled", `volume "scratch" (kubernetes.io/empty-dir)`, "readiness probe succeeded", "exited with code 0", "runtime's createdAt at +"} {
		if !strings.Contains(out, w) {
			t.Errorf("trace lacks %q:\n%s", w, out)
		}
	}
	t.Logf("nodeagent trace pod traced:\n%s", out)

	t.Run("the node API path refuses strangers", func(t *testing.T) {
		checkRefusesStrangers(t, a.SecurePort, "/debug/pods/default/traced/trace", "verb=get, resource=nodes, subresource=proxy")
	})
}
