package e2e

import (
	"context"
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
	criv1 "k8s.io/cri-api/pkg/apis/runtime/v1"

	nart "github.com/nodeagent/nodeagent/pkg/runtime"
	"github.com/nodeagent/nodeagent/test/framework"
)

// priorityPod is a static pod of the given spec.priority.
func priorityPod(name string, priority int) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: %s}
spec:
  priority: %d
  terminationGracePeriodSeconds: 2
  containers:
  - name: c
    image: %s
    command: ["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 1; done"]
`, name, priority, framework.BusyboxImage)
}

// On a node full of pods (maxPods: 1), a static pod of higher priority
// preempts the running one, as the kubelet's critical pod admission
// handler does: the victim gets the Preempting warning, is stopped before
// the critical pod's sandbox is made, and stays Failed with reason
// Preempting and the DisruptionTarget condition; the critical pod runs.
func TestStaticPodPreemptsLowerPriority(t *testing.T) {
	a := newAgentWith(t, "maxPods: 1\n")
	if err := a.WriteManifest("low.yaml", priorityPod("low", 10)); err != nil {
		t.Fatal(err)
	}
	if _, err := a.WaitPod("low", podTimeout, running); err != nil {
		t.Fatal(err)
	}
	if err := a.WriteManifest("high.yaml", priorityPod("high", 100)); err != nil {
		t.Fatal(err)
	}
	high, err := a.WaitPod("high", podTimeout, running)
	if err != nil {
		t.Fatal(err)
	}
	low, err := a.WaitPod("low", podTimeout, phase(v1.PodFailed))
	if err != nil {
		t.Fatal(err)
	}
	if low.Status.Reason != "Preempting" || low.Status.Message != "Preempted in order to admit critical pod" {
		t.Errorf("low status %s %q, want Preempting %q", low.Status.Reason, low.Status.Message, "Preempted in order to admit critical pod")
	}
	if !hasCondition(low, v1.DisruptionTarget, v1.ConditionTrue) {
		t.Errorf("low has no DisruptionTarget condition: %+v", low.Status.Conditions)
	}
	for _, c := range low.Status.Conditions {
		if c.Type == v1.DisruptionTarget && (c.Reason != "TerminationByKubelet" || c.Message != "Pod was preempted by Kubelet to accommodate a critical pod.") {
			t.Errorf("DisruptionTarget %s %q", c.Reason, c.Message)
		}
	}
	if err := a.WaitLog(`reason=Preempting message="Preempted in order to admit critical pod"`, podTimeout); err != nil {
		t.Error(err)
	}
	// Killed before the critical pod's sandbox was made, as upstream's
	// blocking killPodNow; and never started again.
	created := sandboxCreated(t, string(high.UID))
	cs := containersOf(t, string(low.UID))
	if len(cs) != 1 {
		t.Fatalf("low has %d containers, want its one stopped", len(cs))
	}
	st, err := cri.ContainerStatus(context.Background(), cs[0].Id, false)
	if err != nil {
		t.Fatal(err)
	}
	if s := st.GetStatus(); s.State != criv1.ContainerState_CONTAINER_EXITED || s.FinishedAt > created {
		t.Errorf("low's container %s finished at %d, high's sandbox created at %d", s.State, s.FinishedAt, created)
	}
}

// sandboxCreated is when the pod's sandbox was created (ns since the epoch).
func sandboxCreated(t *testing.T, uid string) int64 {
	t.Helper()
	sbs, err := cri.ListPodSandbox(context.Background(), &criv1.PodSandboxFilter{
		LabelSelector: map[string]string{nart.LabelPodUID: uid},
	})
	if err != nil || len(sbs) != 1 {
		t.Fatalf("sandboxes of %s: %d, %v", uid, len(sbs), err)
	}
	return sbs[0].CreatedAt
}
