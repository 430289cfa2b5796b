package flow

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeagent/nodeagent/test/framework"
)

// resizePod is a Guaranteed pod of one container limited to 100m of cpu
// and 64Mi of memory, with the given resizePolicy.
func resizePod(name string, policy []v1.ContainerResizePolicy) *v1.Pod {
	grace := int64(1)
	rl := v1.ResourceList{v1.ResourceCPU: resource.MustParse("100m"), v1.ResourceMemory: resource.MustParse("64Mi")}
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: v1.PodSpec{
			TerminationGracePeriodSeconds: &grace,
			Containers: []v1.Container{{
				Name: "main", Image: framework.BusyboxImage, Command: []string{"sh", "-c", sleeper},
				Resources:    v1.ResourceRequirements{Requests: rl, Limits: rl.DeepCopy()},
				ResizePolicy: policy,
			}},
		},
	}
}

func createRunning(t *testing.T, pod *v1.Pod) *v1.Pod {
	t.Helper()
	ctx := context.Background()
	if _, err := admin.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	deleteOnCleanup(t, "pod/"+pod.Name)
	var running *v1.Pod
	waitFor(t, apiTimeout, pod.Name+" to run", func() (bool, error) {
		p, err := admin.CoreV1().Pods("default").Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		running = p
		return p.Status.Phase == v1.PodRunning && len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].Ready, fmt.Errorf("phase %s", p.Status.Phase)
	})
	return running
}

// containerCgroupFile reads a control file of the pod's running container,
// whose cgroup is the container's ID under the pod cgroup (containerd's
// cgroupfs layout).
func containerCgroupFile(t *testing.T, pod *v1.Pod, hierarchy, file string) string {
	t.Helper()
	id := strings.TrimPrefix(pod.Status.ContainerStatuses[0].ContainerID, "containerd://")
	path := filepath.Join("/sys/fs/cgroup", hierarchy, framework.CgroupRoot, "kubepods", "pod"+string(pod.UID), id, file)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// kubectl patch --subresource resize changes a running container's cpu
// limit in place (NotRequired): its cgroup's quota follows without a
// restart and the status reports the new resources; so does a memory limit
// decrease above the usage; a resize beyond the node's cpu is Infeasible
// and changes nothing.
func TestResizeCPUInPlace(t *testing.T) {
	newAgent(t)
	waitSchedulable(t)
	ctx := context.Background()
	pod := createRunning(t, resizePod("resize-cpu", nil))
	if got := containerCgroupFile(t, pod, "cpu", "cpu.cfs_quota_us"); got != "10000" {
		t.Fatalf("cpu.cfs_quota_us before the resize = %s, want 10000", got)
	}
	mustKubectl(t, "patch", "pod", "resize-cpu", "--subresource", "resize", "--patch",
		`{"spec":{"containers":[{"name":"main","resources":{"requests":{"cpu":"200m"},"limits":{"cpu":"200m"}}}]}}`)
	var resized *v1.Pod
	waitFor(t, apiTimeout, "the cpu resize in the status", func() (bool, error) {
		p, err := admin.CoreV1().Pods("default").Get(ctx, "resize-cpu", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		resized = p
		cs := p.Status.ContainerStatuses[0]
		if cs.Resources == nil {
			return false, fmt.Errorf("no resources in the status")
		}
		return cs.Resources.Limits.Cpu().String() == "200m" && cs.AllocatedResources.Cpu().String() == "200m" &&
			resizeCondition(p, v1.PodResizeInProgress) == nil, fmt.Errorf("resources %v, allocated %v, conditions %v", cs.Resources, cs.AllocatedResources, p.Status.Conditions)
	})
	cs := resized.Status.ContainerStatuses[0]
	if cs.RestartCount != 0 || cs.ContainerID != pod.Status.ContainerStatuses[0].ContainerID {
		t.Errorf("container restarted for a NotRequired resize: restartCount %d, id %s (was %s)", cs.RestartCount, cs.ContainerID, pod.Status.ContainerStatuses[0].ContainerID)
	}
	if got := containerCgroupFile(t, resized, "cpu", "cpu.cfs_quota_us"); got != "20000" {
		t.Errorf("container cpu.cfs_quota_us after the resize = %s, want 20000", got)
	}
	podQuota, err := os.ReadFile(filepath.Join("/sys/fs/cgroup/cpu", framework.CgroupRoot, "kubepods", "pod"+string(pod.UID), "cpu.cfs_quota_us"))
	if err != nil || strings.TrimSpace(string(podQuota)) != "20000" {
		t.Errorf("pod cpu.cfs_quota_us after the resize = %q (%v), want 20000", podQuota, err)
	}
	if resized.Generation != pod.Generation+1 {
		t.Errorf("generation %d, want %d", resized.Generation, pod.Generation+1)
	}

	// A memory limit decrease with NotRequired (allowed since v1.34): the
	// container uses far less, so it is applied in place.
	mustKubectl(t, "patch", "pod", "resize-cpu", "--subresource", "resize", "--patch",
		`{"spec":{"containers":[{"name":"main","resources":{"requests":{"memory":"48Mi"},"limits":{"memory":"48Mi"}}}]}}`)
	waitFor(t, apiTimeout, "the memory decrease in the status", func() (bool, error) {
		p, err := admin.CoreV1().Pods("default").Get(ctx, "resize-cpu", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		resized = p
		cs := p.Status.ContainerStatuses[0]
		return cs.Resources.Limits.Memory().Value() == 48<<20 && resizeCondition(p, v1.PodResizeInProgress) == nil,
			fmt.Errorf("resources %v, conditions %v", cs.Resources, p.Status.Conditions)
	})
	if got := containerCgroupFile(t, resized, "memory", "memory.limit_in_bytes"); got != strconv.Itoa(48<<20) {
		t.Errorf("container memory.limit_in_bytes after the decrease = %s, want %d", got, 48<<20)
	}
	if cs := resized.Status.ContainerStatuses[0]; cs.RestartCount != 0 {
		t.Errorf("restartCount %d after an in-place memory decrease", cs.RestartCount)
	}

	// 1000 cores: more than the node has.
	mustKubectl(t, "patch", "pod", "resize-cpu", "--subresource", "resize", "--patch",
		`{"spec":{"containers":[{"name":"main","resources":{"requests":{"cpu":"1000"},"limits":{"cpu":"1000"}}}]}}`)
	waitFor(t, apiTimeout, "PodResizePending Infeasible", func() (bool, error) {
		p, err := admin.CoreV1().Pods("default").Get(ctx, "resize-cpu", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		c := resizeCondition(p, v1.PodResizePending)
		return c != nil && c.Reason == v1.PodReasonInfeasible && c.ObservedGeneration == p.Generation &&
			strings.HasPrefix(c.Message, "Node didn't have enough capacity: cpu, requested: 1000000, capacity: "), fmt.Errorf("conditions %v", p.Status.Conditions)
	})
	p, err := admin.CoreV1().Pods("default").Get(ctx, "resize-cpu", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cs := p.Status.ContainerStatuses[0]; cs.Resources.Limits.Cpu().String() != "200m" || cs.AllocatedResources.Cpu().String() != "200m" || cs.RestartCount != 0 {
		t.Errorf("an infeasible resize changed the container: resources %v, allocated %v, restarts %d", cs.Resources, cs.AllocatedResources, cs.RestartCount)
	}
	if got := containerCgroupFile(t, p, "cpu", "cpu.cfs_quota_us"); got != "20000" {
		t.Errorf("container cpu.cfs_quota_us after the infeasible resize = %s, want 20000", got)
	}
}

// A memory resize of a container whose memory resizePolicy is
// RestartContainer restarts it once, with the new limit.
func TestResizeMemoryRestartsContainer(t *testing.T) {
	newAgent(t)
	waitSchedulable(t)
	ctx := context.Background()
	pod := createRunning(t, resizePod("resize-mem", []v1.ContainerResizePolicy{
		{ResourceName: v1.ResourceCPU, RestartPolicy: v1.NotRequired},
		{ResourceName: v1.ResourceMemory, RestartPolicy: v1.RestartContainer},
	}))
	if got := containerCgroupFile(t, pod, "memory", "memory.limit_in_bytes"); got != strconv.Itoa(64<<20) {
		t.Fatalf("memory.limit_in_bytes before the resize = %s, want %d", got, 64<<20)
	}
	mustKubectl(t, "patch", "pod", "resize-mem", "--subresource", "resize", "--patch",
		`{"spec":{"containers":[{"name":"main","resources":{"requests":{"memory":"96Mi"},"limits":{"memory":"96Mi"}}}]}}`)
	var resized *v1.Pod
	waitFor(t, apiTimeout, "the memory resize to restart the container", func() (bool, error) {
		p, err := admin.CoreV1().Pods("default").Get(ctx, "resize-mem", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		resized = p
		cs := p.Status.ContainerStatuses[0]
		return cs.RestartCount == 1 && cs.State.Running != nil && cs.Resources != nil && cs.Resources.Limits.Memory().Value() == 96<<20 &&
			resizeCondition(p, v1.PodResizeInProgress) == nil, fmt.Errorf("restarts %d, resources %v", cs.RestartCount, cs.Resources)
	})
	if got := containerCgroupFile(t, resized, "memory", "memory.limit_in_bytes"); got != strconv.Itoa(96<<20) {
		t.Errorf("memory.limit_in_bytes after the resize = %s, want %d", got, 96<<20)
	}
}

func resizeCondition(p *v1.Pod, t v1.PodConditionType) *v1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == t {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}
