package flow

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeagent/nodeagent/pkg/controlplane/server"
	"github.com/nodeagent/nodeagent/test/framework"
)

// TestKubectlDebugStartsEphemeralContainer: `kubectl debug --target` adds
// an ephemeral container to a running pod; the agent starts it in the
// pod, in the target's process namespace, reports it and never restarts
// it.
func TestKubectlDebugStartsEphemeralContainer(t *testing.T) {
	newAgent(t)
	waitSchedulable(t)
	deleteOnCleanup(t, "pod/dbg")
	mustKubectl(t, "run", "dbg", "--image="+framework.BusyboxImage, "--", "sh", "-c", "trap 'exit 0' TERM; httpd -f -p 8080 & wait")
	waitPodRunning(t, "dbg")

	mustKubectl(t, "debug", "dbg", "--image="+framework.BusyboxImage, "--target=dbg", "--container=debugger",
		"--", "sh", "-c", "trap 'exit 0' TERM; ps > /tmp/ps; sleep 3600 & wait")
	var pod *v1.Pod
	waitFor(t, apiTimeout, "the ephemeral container to run", func() (bool, error) {
		p, err := admin.CoreV1().Pods("default").Get(context.Background(), "dbg", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		pod = p
		for _, s := range p.Status.EphemeralContainerStatuses {
			if s.Name == "debugger" && s.State.Running != nil && s.ContainerID != "" {
				return true, nil
			}
		}
		return false, fmt.Errorf("ephemeral statuses %+v", p.Status.EphemeralContainerStatuses)
	})
	// It shares the target's process namespace: httpd is visible to it.
	var id string
	for _, s := range pod.Status.EphemeralContainerStatuses {
		id = s.ContainerID[strings.Index(s.ContainerID, "://")+3:]
	}
	var ps string
	waitFor(t, 30*time.Second, "ps output in the debugger", func() (bool, error) {
		res, err := cri.ExecSync(context.Background(), id, []string{"cat", "/tmp/ps"}, 10*time.Second)
		if err != nil || res.ExitCode != 0 {
			return false, fmt.Errorf("exec: %v %+v", err, res)
		}
		ps = string(res.Stdout)
		return strings.Contains(ps, "sleep 3600") || strings.Contains(ps, "httpd"), nil
	})
	if !strings.Contains(ps, "httpd") {
		t.Errorf("the debugger does not see the target's processes:\n%s", ps)
	}
	if n := len(pod.Status.ContainerStatuses); n != 1 || pod.Status.Phase != v1.PodRunning {
		t.Errorf("pod status after debug: phase %s, %d container statuses", pod.Status.Phase, n)
	}
}

// TestKubectlDebugInteractive: `kubectl debug -it --target` starts an
// ephemeral container and attaches the terminal to it.
func TestKubectlDebugInteractive(t *testing.T) {
	newAgent(t)
	waitSchedulable(t)
	deleteOnCleanup(t, "pod/dbgi")
	mustKubectl(t, "run", "dbgi", "--image="+framework.BusyboxImage, "--", "sh", "-c", "trap 'exit 0' TERM; sleep 3600 & wait")
	waitPodRunning(t, "dbgi")
	ctx, cancel := context.WithTimeout(context.Background(), apiTimeout)
	defer cancel()
	line := fmt.Sprintf("%s --kubeconfig %s debug -it dbgi --image=%s --target=dbgi --container=shell -- sh -c 'read x; echo in-debug-$x'",
		kubectlBin, filepath.Join(dataDir, server.KubeconfigFile), framework.BusyboxImage)
	cmd := exec.CommandContext(ctx, "script", "-qec", line, "/dev/null")
	cmd.Env = []string{"HOME=" + kubectlHome, "PATH=" + os.Getenv("PATH"), "TERM=dumb"}
	cmd.Stdin = strings.NewReader("42\n") // typed at the terminal once attached
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "in-debug-42") {
		t.Errorf("kubectl debug -it: %v\n%s", err, out)
	}
}
