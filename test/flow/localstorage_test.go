package flow

import (
	"context"
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Local storage limits on the real runtime, without node pressure (the
// agent's evictionHard is empty): a pod writing 8Mi into a disk emptyDir
// whose sizeLimit is 4Mi is Failed with reason Evicted and the kubelet's
// message, with a Warning Evicted event; a pod beside it, under its own
// emptyDir limit, keeps running. (Here, not in test/e2e: the standalone
// agent's pods are static, and static pods are critical, never evicted.)
func TestEmptyDirSizeLimitEvictsPod(t *testing.T) {
	newAgent(t)
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
	p, err := pods.Get(ctx, neighbour.Name, metav1.GetOptions{})
	if err != nil || !runningPod(p) || p.Status.Phase != v1.PodRunning {
		t.Errorf("the neighbour does not run: %v %+v", err, p.Status)
	}
}
