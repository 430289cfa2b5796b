package flow

import (
	"context"
	"fmt"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeagent/nodeagent/test/framework"
)

// Memory eviction on the real runtime. The pods' share of the node is
// made 1 GiB (kubeReserved: the rest), so that the allocatableMemory.available
// threshold the kubelet derives from evictionHard memory.available (with
// enforceNodeAllocatable: pods) depends on this test's pods alone, not on
// the shared machine's page cache. A BestEffort pod writing 500Mi into two
// memory-medium emptyDirs (sizeLimit 300Mi) takes the pods below 650Mi
// available: the node reports MemoryPressure, the pod is Failed with
// reason Evicted, upstream's message and the DisruptionTarget condition,
// with a Warning Evicted event; the Guaranteed pod beside it keeps
// running, and the pressure clears after evictionPressureTransitionPeriod.
func TestMemoryPressureEvictsBestEffortPod(t *testing.T) {
	total, err := framework.HostMemTotal()
	if err != nil {
		t.Fatal(err)
	}
	reserved := total - 1<<30
	config := fmt.Sprintf("evictionPressureTransitionPeriod: 5s\nkubeReserved: {memory: \"%dKi\"}\n", reserved/1024)
	newAgentConfigured(t, framework.TestInstance, nodeName, cri, config, func(a *framework.Agent) error {
		return a.SetEvictionHard(`{memory.available: "650Mi"}`)
	})
	waitSchedulable(t)
	ctx := context.Background()
	// Allocatable holds back the reservation and the hard threshold.
	waitFor(t, apiTimeout, "allocatable memory 1Gi - 650Mi", func() (bool, error) {
		n, err := admin.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		q := n.Status.Allocatable[v1.ResourceMemory]
		return q.Value() == total-reserved/1024*1024-650<<20, fmt.Errorf("allocatable memory %s", &q)
	})
	pods := admin.CoreV1().Pods("default")

	guaranteed := evictionPod("eviction-guaranteed", sleeper)
	rl := v1.ResourceList{v1.ResourceCPU: resource.MustParse("100m"), v1.ResourceMemory: resource.MustParse("64Mi")}
	guaranteed.Spec.Containers[0].Resources = v1.ResourceRequirements{Requests: rl, Limits: rl}
	if _, err := pods.Create(ctx, guaranteed, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	deleteOnCleanup(t, "pod/"+guaranteed.Name)
	waitPodRunning(t, guaranteed.Name)

	// Two volumes: each tmpfs is sized at most the node's allocatable
	// memory, which holds back the 650Mi threshold (1Gi - 650Mi), as
	// upstream's.
	filler := evictionPod("eviction-filler", "dd if=/dev/zero of=/data/fill bs=1M count=250; dd if=/dev/zero of=/more/fill bs=1M count=250; "+sleeper)
	limit := resource.MustParse("300Mi")
	memoryDir := v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{Medium: v1.StorageMediumMemory, SizeLimit: &limit}}
	filler.Spec.Volumes = []v1.Volume{{Name: "data", VolumeSource: memoryDir}, {Name: "more", VolumeSource: memoryDir}}
	filler.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "data", MountPath: "/data"}, {Name: "more", MountPath: "/more"}}
	created, err := pods.Create(ctx, filler, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	deleteOnCleanup(t, "pod/"+filler.Name)

	sawPressure := false
	var st v1.PodStatus
	waitFor(t, apiTimeout, "the filler to be evicted", func() (bool, error) {
		if memoryPressure(t) == v1.ConditionTrue {
			sawPressure = true
		}
		p, err := pods.Get(ctx, filler.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		st = p.Status
		return p.Status.Phase == v1.PodFailed, fmt.Errorf("phase %s reason %q", p.Status.Phase, p.Status.Reason)
	})
	const prefix = "The node was low on resource: memory. Threshold quantity: 650Mi, available: "
	if st.Reason != "Evicted" || !strings.HasPrefix(st.Message, prefix) ||
		!strings.Contains(st.Message, "Container main was using ") || !strings.HasSuffix(st.Message, ", request is 0, has larger consumption of memory. ") {
		t.Errorf("filler status %s %q", st.Reason, st.Message)
	}
	found := false
	for _, c := range st.Conditions {
		if c.Type == v1.DisruptionTarget {
			found = c.Status == v1.ConditionTrue && c.Reason == "TerminationByKubelet" && c.Message == st.Message
		}
	}
	if !found {
		t.Errorf("no DisruptionTarget condition with the message: %+v", st.Conditions)
	}
	waitFor(t, apiTimeout, "the Evicted event", func() (bool, error) {
		evs, err := admin.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + filler.Name + ",reason=Evicted"})
		if err != nil {
			return false, err
		}
		for _, e := range evs.Items {
			if e.InvolvedObject.UID == created.UID && e.Type == v1.EventTypeWarning && e.Message == st.Message {
				return true, nil
			}
		}
		return false, fmt.Errorf("%d events", len(evs.Items))
	})
	waitFor(t, apiTimeout, "MemoryPressure to have been reported, then to clear", func() (bool, error) {
		c := memoryPressure(t)
		sawPressure = sawPressure || c == v1.ConditionTrue
		return sawPressure && c == v1.ConditionFalse, fmt.Errorf("MemoryPressure %s, seen True: %v", c, sawPressure)
	})
	if p, err := pods.Get(ctx, guaranteed.Name, metav1.GetOptions{}); err != nil || !runningPod(p) {
		t.Errorf("the Guaranteed pod does not run: %v %+v", err, p.Status)
	}
}

func evictionPod(name, command string) *v1.Pod {
	grace := int64(1)
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: v1.PodSpec{NodeName: nodeName, TerminationGracePeriodSeconds: &grace,
			Containers: []v1.Container{{Name: "main", Image: framework.BusyboxImage, Command: []string{"sh", "-c", command}}}},
	}
}

// memoryPressure is the node's MemoryPressure status.
func memoryPressure(t *testing.T) v1.ConditionStatus {
	n, err := admin.CoreV1().Nodes().Get(context.Background(), nodeName, metav1.GetOptions{})
	if err != nil {
		t.Logf("get node: %v", err)
		return ""
	}
	for _, c := range n.Status.Conditions {
		if c.Type == v1.NodeMemoryPressure {
			return c.Status
		}
	}
	return ""
}
