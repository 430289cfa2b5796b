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

// A pod created through the API with pod-level resources: the API sets
// its QoS class from them, the scheduler places it, and the agent makes
// its pod cgroup, in the class's place, limited to them.
func TestAPIPodLevelResourcesLimitThePodCgroup(t *testing.T) {
	newAgent(t)
	waitSchedulable(t)
	ctx := context.Background()
	grace := int64(1)
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "podlevel", Namespace: "default"},
		Spec: v1.PodSpec{
			TerminationGracePeriodSeconds: &grace,
			Resources: &v1.ResourceRequirements{
				Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("300m"), v1.ResourceMemory: resource.MustParse("96Mi")},
				Limits:   v1.ResourceList{v1.ResourceCPU: resource.MustParse("300m"), v1.ResourceMemory: resource.MustParse("96Mi")},
			},
			Containers: []v1.Container{{Name: "main", Image: framework.BusyboxImage, Command: []string{"sh", "-c", sleeper}}},
		},
	}
	created, err := admin.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	deleteOnCleanup(t, "pod/podlevel")
	if created.Status.QOSClass != v1.PodQOSGuaranteed {
		t.Errorf("qosClass %q, want Guaranteed", created.Status.QOSClass)
	}
	waitFor(t, apiTimeout, "podlevel to run", func() (bool, error) {
		p, err := admin.CoreV1().Pods("default").Get(ctx, "podlevel", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return p.Status.Phase == v1.PodRunning, fmt.Errorf("phase %s", p.Status.Phase)
	})
	dir := framework.CgroupRoot + "/kubepods/pod" + string(created.UID)
	for file, want := range map[string]string{
		"memory/memory.limit_in_bytes": strconv.Itoa(96 << 20),
		"cpu/cpu.cfs_quota_us":         "30000",
		"cpu/cpu.shares":               "307",
	} {
		hierarchy, name := filepath.Split(file)
		b, err := os.ReadFile(filepath.Join("/sys/fs/cgroup", hierarchy, dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.TrimSpace(string(b)); got != want {
			t.Errorf("%s of %s = %q, want %q", name, dir, got, want)
		}
	}
	if err := admin.CoreV1().Pods("default").Delete(ctx, "podlevel", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, apiTimeout, "podlevel's cgroup to go", func() (bool, error) {
		_, err := os.Stat(filepath.Join("/sys/fs/cgroup/memory", dir))
		return os.IsNotExist(err), err
	})
}
