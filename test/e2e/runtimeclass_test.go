package e2e

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/nodeagent/nodeagent/test/framework"
)

// TestStandaloneRuntimeClassRefused: a standalone agent has no API to
// resolve a static pod's runtimeClassName to a handler; the pod gets no
// sandbox (the FailedCreatePodSandBox event, logged) and waits in
// ContainerCreating, rather than running on the default runtime as the
// kubelet without an API client would. The agent goes on with other pods.
func TestStandaloneRuntimeClassRefused(t *testing.T) {
	a := newAgent(t)
	manifest := strings.Replace(podYAML("classy", "Always", "sleep 3600"), "spec:\n", "spec:\n  runtimeClassName: crun\n", 1)
	if err := a.WriteManifest("classy.yaml", manifest); err != nil {
		t.Fatal(err)
	}
	if err := a.WriteManifest("plain.yaml", imagePod("plain", framework.BusyboxImage, "IfNotPresent")); err != nil {
		t.Fatal(err)
	}
	if err := a.WaitLog("RuntimeClass crun: RuntimeClasses cannot be looked up: the agent runs without an API server", podTimeout); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(a.Logs(), "FailedCreatePodSandBox") {
		t.Errorf("no FailedCreatePodSandBox event in the log")
	}
	p, err := a.WaitPod("classy", podTimeout, func(p *v1.Pod) bool {
		cs := p.Status.ContainerStatuses
		return p.Status.Phase == v1.PodPending && len(cs) == 1 && cs[0].State.Waiting != nil && cs[0].State.Waiting.Reason == "ContainerCreating"
	})
	if err != nil {
		t.Fatal(err)
	}
	if sbs := sandboxIDs(t, string(p.UID)); len(sbs) != 0 {
		t.Errorf("sandboxes %v for a pod whose class cannot be resolved", sbs)
	}
	if _, err := a.WaitPod("plain", podTimeout, running); err != nil {
		t.Fatal(err)
	}
}
