package controller_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	storagehelpers "k8s.io/component-helpers/storage/volume"
)

// readyNode registers a schedulable Ready node (no agent runs for it).
func readyNode(t *testing.T, c kubernetes.Interface, name string) {
	t.Helper()
	n := &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{v1.LabelHostname: name}},
		Status: v1.NodeStatus{
			Capacity:   v1.ResourceList{v1.ResourceCPU: resource.MustParse("4"), v1.ResourceMemory: resource.MustParse("8Gi"), v1.ResourcePods: resource.MustParse("110")},
			Conditions: []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue, Reason: "Test", LastHeartbeatTime: metav1.Now()}},
		},
	}
	if _, err := c.CoreV1().Nodes().Create(t.Context(), n, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func hostPathVolume(name, size string, mutate ...func(*v1.PersistentVolume)) *v1.PersistentVolume {
	pv := &v1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1.PersistentVolumeSpec{
			Capacity:               v1.ResourceList{v1.ResourceStorage: resource.MustParse(size)},
			AccessModes:            []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			PersistentVolumeSource: v1.PersistentVolumeSource{HostPath: &v1.HostPathVolumeSource{Path: "/tmp/" + name}},
		},
	}
	for _, m := range mutate {
		m(pv)
	}
	return pv
}

func onlyOn(node string) func(*v1.PersistentVolume) {
	return func(pv *v1.PersistentVolume) {
		pv.Spec.HostPath, pv.Spec.Local = nil, &v1.LocalVolumeSource{Path: "/mnt/" + pv.Name}
		pv.Spec.NodeAffinity = &v1.VolumeNodeAffinity{Required: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{
			MatchExpressions: []v1.NodeSelectorRequirement{{Key: v1.LabelHostname, Operator: v1.NodeSelectorOpIn, Values: []string{node}}},
		}}}}
	}
}

func newClaim(name, size string, mutate ...func(*v1.PersistentVolumeClaim)) *v1.PersistentVolumeClaim {
	c := &v1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1.PersistentVolumeClaimSpec{
			AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			Resources:   v1.VolumeResourceRequirements{Requests: v1.ResourceList{v1.ResourceStorage: resource.MustParse(size)}},
		},
	}
	for _, m := range mutate {
		m(c)
	}
	return c
}

func podWithClaim(name, claim string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1.PodSpec{
			Containers: []v1.Container{{Name: "c", Image: "busybox:1"}},
			Volumes:    []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}},
		},
	}
}

func claimString(c *v1.PersistentVolumeClaim, err error) string {
	if err != nil {
		return err.Error()
	}
	return fmt.Sprintf("phase=%s volume=%q annotations=%v capacity=%v", c.Status.Phase, c.Spec.VolumeName, c.Annotations, c.Status.Capacity)
}

func podScheduled(p *v1.Pod) string {
	for _, c := range p.Status.Conditions {
		if c.Type == v1.PodScheduled {
			return fmt.Sprintf("node=%q PodScheduled=%s %s", p.Spec.NodeName, c.Status, c.Message)
		}
	}
	return fmt.Sprintf("node=%q", p.Spec.NodeName)
}

// TestPersistentVolumes runs the binder and the scheduler in the real
// server: a claim binds to the smallest fitting volume; a pod whose claim
// is unbound waits with upstream's message until a volume appears; a
// WaitForFirstConsumer claim binds to the local volume of the node its
// pod is scheduled to; a deleted claim releases its volume.
func TestPersistentVolumes(t *testing.T) {
	c := startControlPlane(t)
	ctx := t.Context()
	const ns = metav1.NamespaceDefault
	readyNode(t, c, "n1")
	readyNode(t, c, "n2")
	for _, pv := range []*v1.PersistentVolume{hostPathVolume("pv-big", "10Gi"), hostPathVolume("pv-small", "1Gi")} {
		if _, err := c.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	claims := c.CoreV1().PersistentVolumeClaims(ns)
	if _, err := claims.Create(ctx, newClaim("data", "500Mi"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "claim data bound to pv-small", func(ctx context.Context) (bool, string, error) {
		claim, err := claims.Get(ctx, "data", metav1.GetOptions{})
		return err == nil && claim.Status.Phase == v1.ClaimBound && claim.Spec.VolumeName == "pv-small" &&
			claim.Annotations[storagehelpers.AnnBindCompleted] == "yes", claimString(claim, err), nil
	})
	eventually(t, "pv-small bound", func(ctx context.Context) (bool, string, error) {
		pv, err := c.CoreV1().PersistentVolumes().Get(ctx, "pv-small", metav1.GetOptions{})
		if err != nil {
			return false, err.Error(), nil
		}
		ok := pv.Status.Phase == v1.VolumeBound && pv.Spec.ClaimRef != nil && pv.Spec.ClaimRef.Name == "data" && pv.Spec.ClaimRef.UID != ""
		return ok, fmt.Sprintf("phase=%s claimRef=%v", pv.Status.Phase, pv.Spec.ClaimRef), nil
	})

	// A pod whose claim cannot bind yet waits, then runs once it does.
	if _, err := claims.Create(ctx, newClaim("later", "50Gi"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CoreV1().Pods(ns).Create(ctx, podWithClaim("waits", "later"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	const unbound = "0/2 nodes are available: pod has unbound immediate PersistentVolumeClaims."
	eventually(t, "pod unschedulable", func(ctx context.Context) (bool, string, error) {
		p, err := c.CoreV1().Pods(ns).Get(ctx, "waits", metav1.GetOptions{})
		if err != nil {
			return false, err.Error(), nil
		}
		return strings.HasSuffix(podScheduled(p), unbound), podScheduled(p), nil
	})
	eventually(t, "FailedBinding event", func(ctx context.Context) (bool, string, error) {
		evs, err := c.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=later"})
		if err != nil {
			return false, err.Error(), nil
		}
		var seen []string
		for _, e := range evs.Items {
			seen = append(seen, e.Reason+": "+e.Message+" ["+e.Source.Component+"]")
		}
		want := "FailedBinding: no persistent volumes available for this claim and no storage class is set [persistentvolume-controller]"
		return slices.Contains(seen, want), strings.Join(seen, "; "), nil
	})
	if _, err := c.CoreV1().PersistentVolumes().Create(ctx, hostPathVolume("pv-huge", "100Gi"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "pod scheduled once its claim is bound", func(ctx context.Context) (bool, string, error) {
		p, err := c.CoreV1().Pods(ns).Get(ctx, "waits", metav1.GetOptions{})
		if err != nil {
			return false, err.Error(), nil
		}
		return p.Spec.NodeName != "", podScheduled(p), nil
	})

	// WaitForFirstConsumer: the volume on the pod's node.
	wffc := storagev1.VolumeBindingWaitForFirstConsumer
	class := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "local"}, Provisioner: "kubernetes.io/no-provisioner", VolumeBindingMode: &wffc}
	if _, err := c.StorageV1().StorageClasses().Create(ctx, class, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	local := hostPathVolume("pv-local-n2", "1Gi", onlyOn("n2"), func(pv *v1.PersistentVolume) { pv.Spec.StorageClassName = "local" })
	if _, err := c.CoreV1().PersistentVolumes().Create(ctx, local, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	localClass := "local"
	if _, err := claims.Create(ctx, newClaim("nearby", "1Gi", func(c *v1.PersistentVolumeClaim) { c.Spec.StorageClassName = &localClass }), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CoreV1().Pods(ns).Create(ctx, podWithClaim("consumer", "nearby"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "consumer on n2 with its claim bound", func(ctx context.Context) (bool, string, error) {
		p, err := c.CoreV1().Pods(ns).Get(ctx, "consumer", metav1.GetOptions{})
		if err != nil {
			return false, err.Error(), nil
		}
		claim, err := claims.Get(ctx, "nearby", metav1.GetOptions{})
		state := podScheduled(p) + "; " + claimString(claim, err)
		return p.Spec.NodeName == "n2" && err == nil && claim.Spec.VolumeName == "pv-local-n2" && claim.Status.Phase == v1.ClaimBound, state, nil
	})

	if err := claims.Delete(ctx, "data", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "pv-small released", func(ctx context.Context) (bool, string, error) {
		pv, err := c.CoreV1().PersistentVolumes().Get(ctx, "pv-small", metav1.GetOptions{})
		if err != nil {
			return false, err.Error(), nil
		}
		return pv.Status.Phase == v1.VolumeReleased, string(pv.Status.Phase), nil
	})
}
