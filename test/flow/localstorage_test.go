package flow

import (
	"context"
	"fmt"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	criv1 "k8s.io/cri-api/pkg/apis/runtime/v1"

	nart "github.com/nodeagent/nodeagent/pkg/runtime"
	"github.com/nodeagent/nodeagent/test/framework"
)

// Local storage limits on the real runtime, without node pressure (the
// agent's evictionHard is empty): a pod writing 8Mi into a disk emptyDir
// whose sizeLimit is 4Mi is Failed with reason Evicted and the kubelet's
// message, with a Warning Evicted event; a pod beside it, under its own
// emptyDir limit, keeps running. (Here, not in test/e2e: the standalone
// agent's pods are static, and static pods are critical, never evicted.)
func TestEmptyDirSizeLimitEvictsPod(t *testing.T) {
	// Volumes measured every second, not upstream's minute, so that the
	// writer's usage is seen at once.
	newAgentConfigured(t, framework.TestInstance, nodeName, cri, "volumeStatsAggPeriod: 1s\n")
	waitSchedulable(t)
	ctx := context.Background()
	pods := admin.CoreV1().Pods("default")
	withDir := func(name, limit, command string) *v1.Pod {
		p := evictionPod(name, command)
		q := resource.MustParse(limit)
		p.Spec.Volumes = []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{SizeLimit: &q}}}}
		p.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "data", MountPath: "/data"}}
		return p
	}
	neighbour := withDir("localstorage-neighbour", "64Mi", "dd if=/dev/zero of=/data/fill bs=1M count=1; "+sleeper)
	if _, err := pods.Create(ctx, neighbour, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	deleteOnCleanup(t, "pod/"+neighbour.Name)
	waitPodRunning(t, neighbour.Name)

	writer := withDir("localstorage-writer", "4Mi", "dd if=/dev/zero of=/data/fill bs=1M count=8; "+sleeper)
	created, err := pods.Create(ctx, writer, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	deleteOnCleanup(t, "pod/"+writer.Name)
	var st v1.PodStatus
	waitFor(t, apiTimeout, "the writer to be evicted", func() (bool, error) {
		p, err := pods.Get(ctx, writer.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		st = p.Status
		return p.Status.Phase == v1.PodFailed, fmt.Errorf("phase %s reason %q", p.Status.Phase, p.Status.Reason)
	})
	const want = `Usage of EmptyDir volume "data" exceeds the limit "4Mi". `
	if st.Reason != "Evicted" || st.Message != want {
		t.Errorf("writer status %s %q, want Evicted %q", st.Reason, st.Message, want)
	}
	waitFor(t, apiTimeout, "the Evicted event", func() (bool, error) {
		evs, err := admin.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + writer.Name + ",reason=Evicted"})
		if err != nil {
			return false, err
		}
		for _, e := range evs.Items {
			if e.InvolvedObject.UID == created.UID && e.Type == v1.EventTypeWarning && e.Message == want {
				return true, nil
			}
		}
		return false, fmt.Errorf("%d events", len(evs.Items))
	})
	if memoryPressure(t) == v1.ConditionTrue {
		t.Error("the node reports MemoryPressure: the eviction was not the local storage check's")
	}
	// The evicted pod's dead container and sandbox go at the next
	// container collection, without disk pressure, as upstream's; the pod
	// keeps its container's terminated status.
	byUID := map[string]string{nart.LabelPodUID: string(created.UID)}
	waitFor(t, apiTimeout, "the evicted pod's containers and sandbox to be collected", func() (bool, error) {
		cs, err := cri.ListContainers(ctx, &criv1.ContainerFilter{LabelSelector: byUID})
		if err != nil {
			return false, err
		}
		sbs, err := cri.ListPodSandbox(ctx, &criv1.PodSandboxFilter{LabelSelector: byUID})
		return err == nil && len(cs) == 0 && len(sbs) == 0, fmt.Errorf("%d containers, %d sandboxes (%v)", len(cs), len(sbs), err)
	})
	if p, err := pods.Get(ctx, writer.Name, metav1.GetOptions{}); err != nil || p.Status.Phase != v1.PodFailed ||
		len(p.Status.ContainerStatuses) != 1 || p.Status.ContainerStatuses[0].State.Terminated == nil {
		t.Errorf("the evicted pod after collection: %v %+v", err, p.Status)
	}
	p, err := pods.Get(ctx, neighbour.Name, metav1.GetOptions{})
	if err != nil || !runningPod(p) || p.Status.Phase != v1.PodRunning {
		t.Errorf("the neighbour does not run: %v %+v", err, p.Status)
	}
}

// TestNoLocalStorageCapacityIsolation: with localStorageCapacityIsolation
// false the node reports no ephemeral-storage (capacity and allocatable),
// so a pod requesting some is Unschedulable with the scheduler's
// "Insufficient ephemeral-storage", and one bound to the node directly is
// rejected by the agent with OutOfephemeral-storage, as upstream's.
func TestNoLocalStorageCapacityIsolation(t *testing.T) {
	newAgentConfigured(t, framework.TestInstance, nodeName, cri, "localStorageCapacityIsolation: false\n")
	waitSchedulable(t)
	ctx := context.Background()
	waitFor(t, apiTimeout, "the node to report no ephemeral-storage", func() (bool, error) {
		n, err := admin.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		_, inCap := n.Status.Capacity[v1.ResourceEphemeralStorage]
		_, inAlloc := n.Status.Allocatable[v1.ResourceEphemeralStorage]
		return !inCap && !inAlloc, fmt.Errorf("capacity %v allocatable %v", n.Status.Capacity, n.Status.Allocatable)
	})
	pods := admin.CoreV1().Pods("default")
	storagePod := func(name, node string) *v1.Pod {
		p := evictionPod(name, sleeper)
		p.Spec.NodeName = node
		p.Spec.Containers[0].Resources.Requests = v1.ResourceList{v1.ResourceEphemeralStorage: resource.MustParse("1Mi")}
		return p
	}
	for _, p := range []*v1.Pod{storagePod("storage-scheduled", ""), storagePod("storage-bound", nodeName)} {
		if _, err := pods.Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		deleteOnCleanup(t, "pod/"+p.Name)
	}
	waitFor(t, apiTimeout, "the scheduler to find the pod unschedulable", func() (bool, error) {
		p, err := pods.Get(ctx, "storage-scheduled", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range p.Status.Conditions {
			if c.Type == v1.PodScheduled && c.Reason == v1.PodReasonUnschedulable {
				return strings.Contains(c.Message, "Insufficient ephemeral-storage"), fmt.Errorf("condition %+v", c)
			}
		}
		return false, fmt.Errorf("conditions %+v", p.Status.Conditions)
	})
	waitFor(t, apiTimeout, "the agent to reject the bound pod", func() (bool, error) {
		p, err := pods.Get(ctx, "storage-bound", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		const msg = "Pod was rejected: Node didn't have enough resource: ephemeral-storage, requested: 1048576, used: 0, capacity: 0"
		return p.Status.Phase == v1.PodFailed && p.Status.Reason == "OutOfephemeral-storage" && p.Status.Message == msg,
			fmt.Errorf("phase %s reason %q message %q", p.Status.Phase, p.Status.Reason, p.Status.Message)
	})
}
