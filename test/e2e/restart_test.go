package e2e

import (
	"context"
	"testing"
	"time"

	criv1 "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodeagent/nodeagent/test/framework"
)

func TestAgentRestartLeavesContainersUntouched(t *testing.T) {
	a := newAgent(t)
	if err := a.WriteManifest("keep.yaml", twoContainerPod("hello")); err != nil {
		t.Fatal(err)
	}
	if err := a.WriteManifest("gone.yaml", imagePod("gone", framework.BusyboxImage, "IfNotPresent")); err != nil {
		t.Fatal(err)
	}
	before, err := a.WaitPod("change", podTimeout, running)
	if err != nil {
		t.Fatal(err)
	}
	gone, err := a.WaitPod("gone", podTimeout, running)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Stop(); err != nil {
		t.Fatal(err)
	}
	// SIGTERM stops the agent, not the pods.
	for _, c := range containersOf(t, string(before.UID)) {
		if c.State != criv1.ContainerState_CONTAINER_RUNNING {
			t.Errorf("container %s is %s after the agent stopped", c.Metadata.Name, c.State)
		}
	}
	// A manifest removed while the agent is down.
	if err := a.RemoveManifest("gone.yaml"); err != nil {
		t.Fatal(err)
	}
	if err := a.Start(); err != nil {
		t.Fatal(err)
	}
	// Let the first sync and several PLEG relists pass, then compare.
	if err := a.WaitLog("first sync done", podTimeout); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second)
	after, err := a.WaitPod("change", podTimeout, running)
	if err != nil {
		t.Fatal(err)
	}
	for name, id := range containerIDs(before) {
		if got := containerIDs(after)[name]; got != id {
			t.Errorf("container %s replaced after agent restart: %s -> %s", name, id, got)
		}
		if cs := status(t, after, name); cs.RestartCount != 0 {
			t.Errorf("container %s restartCount %d after agent restart", name, cs.RestartCount)
		}
	}
	// The relist at start finds the running pod's sandbox before its
	// worker's first sync: no second sandbox.
	if n := sandboxCount(t, string(before.UID)); n != 1 {
		t.Errorf("%d sandboxes after the agent restart, want the one it had", n)
	}
	if after.UID != before.UID || after.Status.PodIP != before.Status.PodIP {
		t.Errorf("pod identity changed: %s/%s -> %s/%s", before.UID, before.Status.PodIP, after.UID, after.Status.PodIP)
	}
	// The pod whose manifest went away while the agent was down is removed.
	deadline := time.Now().Add(podTimeout)
	for len(containersOf(t, string(gone.UID))) > 0 || sandboxCount(t, string(gone.UID)) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("pod removed while the agent was down still in the runtime")
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func sandboxCount(t *testing.T, uid string) int {
	t.Helper()
	sbs, err := cri.ListPodSandbox(context.Background(), &criv1.PodSandboxFilter{
		LabelSelector: map[string]string{"io.kubernetes.pod.uid": uid},
	})
	if err != nil {
		t.Fatal(err)
	}
	return len(sbs)
}

// sandboxIDs lists a pod's sandboxes, newest first.
func sandboxIDs(t *testing.T, uid string) []string {
	t.Helper()
	sbs, err := cri.ListPodSandbox(context.Background(), &criv1.PodSandboxFilter{
		LabelSelector: map[string]string{"io.kubernetes.pod.uid": uid},
	})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	var newest int64
	for _, sb := range sbs {
		if sb.CreatedAt > newest {
			ids = append([]string{sb.Id}, ids...)
			newest = sb.CreatedAt
		} else {
			ids = append(ids, sb.Id)
		}
	}
	return ids
}
