package flow

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
