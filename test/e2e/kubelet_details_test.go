package e2e

import (
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/nodeagent/nodeagent/test/framework"
)

// A failed container's last output without a newline is a partial CRI log
// entry; the kubelet's FallbackToLogsOnError message still includes it.
func TestFallbackToLogsReadsPartialLastLine(t *testing.T) {
	a := newAgent(t)
	if err := a.WriteManifest("partial.yaml", fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: partial}
spec:
  restartPolicy: Never
  containers:
  - name: c
    image: %s
    terminationMessagePolicy: FallbackToLogsOnError
    command: ["sh", "-c", "printf DONE; exit 1"]
`, framework.BusyboxImage)); err != nil {
		t.Fatal(err)
	}
	p, err := a.WaitPod("partial", podTimeout, phase(v1.PodFailed))
	if err != nil {
		t.Fatal(err)
	}
	if term := status(t, p, "c").State.Terminated; term == nil || term.Message != "DONE" {
		t.Errorf("termination %+v, want message %q", term, "DONE")
	}
}
