package persistentvolume

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	storagehelpers "k8s.io/component-helpers/storage/volume"

	"github.com/nodeagent/nodeagent/pkg/controlplane/controller/internal/ctrltest"
)

// start runs the binder on a fake clientset holding objs.
func start(t *testing.T, objs ...runtime.Object) kubernetes.Interface {
	t.Helper()
	client := ctrltest.NewClientset(objs...)
	f := informers.NewSharedInformerFactory(client, 0)
	c := New(client, f, Config{SyncPeriod: time.Hour}, ctrltest.Logger(t))
	ctrltest.Start(t, f, c.Run)
	return client
}

func getPV(ctx context.Context, c kubernetes.Interface, name string) (*v1.PersistentVolume, error) {
	return c.CoreV1().PersistentVolumes().Get(ctx, name, metav1.GetOptions{})
}

func getPVC(ctx context.Context, c kubernetes.Interface, name string) (*v1.PersistentVolumeClaim, error) {
	return c.CoreV1().PersistentVolumeClaims("default").Get(ctx, name, metav1.GetOptions{})
}

func volumeState(pv *v1.PersistentVolume, err error) string {
	if err != nil {
		return err.Error()
	}
	ref := "<none>"
	if pv.Spec.ClaimRef != nil {
		ref = fmt.Sprintf("%s/%s(%s)", pv.Spec.ClaimRef.Namespace, pv.Spec.ClaimRef.Name, pv.Spec.ClaimRef.UID)
	}
	return fmt.Sprintf("phase=%s claimRef=%s annotations=%v", pv.Status.Phase, ref, pv.Annotations)
}

func claimState(c *v1.PersistentVolumeClaim, err error) string {
	if err != nil {
		return err.Error()
	}
	q := c.Status.Capacity[v1.ResourceStorage]
	return fmt.Sprintf("phase=%s volume=%s capacity=%s modes=%v annotations=%v", c.Status.Phase, c.Spec.VolumeName, q.String(), c.Status.AccessModes, c.Annotations)
}

func waitEvent(t *testing.T, c kubernetes.Interface, want string) {
	t.Helper()
	ctrltest.Eventually(t, "event "+want, func(ctx context.Context) (bool, string) {
		evs := ctrltest.Events(ctx, c, "default")
		return slices.ContainsFunc(evs, func(e string) bool { return strings.Contains(e, want) }), strings.Join(evs, "\n")
	})
}

// TestBindAndRelease: the smallest fitting volume is bound both ways with
// upstream's annotations; deleting the claim releases it (Retain).
func TestBindAndRelease(t *testing.T) {
	c := start(t, pv("big", "10Gi"), pv("small", "1Gi"), pv("tiny", "100Mi", phase(v1.VolumePending)), pvc("data", "500Mi"))
	ctx := t.Context()
	ctrltest.Eventually(t, "claim bound", func(ctx context.Context) (bool, string) {
		claim, err := getPVC(ctx, c, "data")
		s := claimState(claim, err)
		return err == nil && claim.Status.Phase == v1.ClaimBound, s
	})
	claim, _ := getPVC(ctx, c, "data")
	q := claim.Status.Capacity[v1.ResourceStorage]
	if claim.Spec.VolumeName != "small" || q.String() != "1Gi" || !slices.Equal(claim.Status.AccessModes, []v1.PersistentVolumeAccessMode{rwo}) ||
		claim.Annotations[storagehelpers.AnnBindCompleted] != "yes" || claim.Annotations[storagehelpers.AnnBoundByController] != "yes" {
		t.Errorf("claim: %s", claimState(claim, nil))
	}
	ctrltest.Eventually(t, "volume bound", func(ctx context.Context) (bool, string) {
		vol, err := getPV(ctx, c, "small")
		return err == nil && vol.Status.Phase == v1.VolumeBound, volumeState(vol, err)
	})
	vol, _ := getPV(ctx, c, "small")
	if ref := vol.Spec.ClaimRef; ref == nil || ref.Name != "data" || ref.UID != claim.UID || ref.Kind != "PersistentVolumeClaim" ||
		vol.Annotations[storagehelpers.AnnBoundByController] != "yes" {
		t.Errorf("volume: %s", volumeState(vol, nil))
	}
	for _, name := range []string{"big", "tiny"} {
		ctrltest.Eventually(t, name+" available", func(ctx context.Context) (bool, string) {
			vol, err := getPV(ctx, c, name)
			return err == nil && vol.Status.Phase == v1.VolumeAvailable && vol.Spec.ClaimRef == nil, volumeState(vol, err)
		})
	}

	if err := c.CoreV1().PersistentVolumeClaims("default").Delete(ctx, "data", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	ctrltest.Eventually(t, "volume released", func(ctx context.Context) (bool, string) {
		vol, err := getPV(ctx, c, "small")
		return err == nil && vol.Status.Phase == v1.VolumeReleased && vol.Spec.ClaimRef != nil, volumeState(vol, err)
	})
}

// TestReclaimDelete: a released volume with policy Delete is deleted.
func TestReclaimDelete(t *testing.T) {
	vol := pv("gone", "1Gi", claimedBy("default", "old", "uid-old"), phase(v1.VolumeBound), func(p *v1.PersistentVolume) {
		p.Spec.PersistentVolumeReclaimPolicy = v1.PersistentVolumeReclaimDelete
	})
	c := start(t, vol)
	ctrltest.Eventually(t, "volume deleted", func(ctx context.Context) (bool, string) {
		vol, err := getPV(ctx, c, "gone")
		return apierrors.IsNotFound(err), volumeState(vol, err)
	})
}

// TestNoVolume: a claim without a class that finds nothing stays Pending
// with upstream's FailedBinding event; one with a missing class gets
// ProvisioningFailed.
func TestNoVolume(t *testing.T) {
	c := start(t, pv("small", "1Gi"), pvc("huge", "1Ti"), pvc("classy", "1Gi", claimClass("fast")))
	waitEvent(t, c, "PersistentVolumeClaim huge Normal FailedBinding: no persistent volumes available for this claim and no storage class is set [persistentvolume-controller]")
	waitEvent(t, c, `PersistentVolumeClaim classy Warning ProvisioningFailed: storageclass.storage.k8s.io "fast" not found [persistentvolume-controller]`)
	claim, err := getPVC(t.Context(), c, "huge")
	if err != nil || claim.Status.Phase != v1.ClaimPending || claim.Spec.VolumeName != "" {
		t.Errorf("claim: %s", claimState(claim, err))
	}
}

// TestRequestedVolume: a claim naming a volume gets it, not the smaller
// one; a claim naming a volume that does not fit gets VolumeMismatch.
func TestRequestedVolume(t *testing.T) {
	named := pvc("named", "1Gi", func(c *v1.PersistentVolumeClaim) { c.Spec.VolumeName = "big" })
	misfit := pvc("misfit", "5Gi", func(c *v1.PersistentVolumeClaim) { c.Spec.VolumeName = "small" })
	c := start(t, pv("small", "1Gi"), pv("big", "2Gi"), named, misfit)
	ctrltest.Eventually(t, "named claim bound", func(ctx context.Context) (bool, string) {
		claim, err := getPVC(ctx, c, "named")
		return err == nil && claim.Status.Phase == v1.ClaimBound && claim.Spec.VolumeName == "big", claimState(claim, err)
	})
	claim, _ := getPVC(t.Context(), c, "named")
	if _, by := claim.Annotations[storagehelpers.AnnBoundByController]; by {
		t.Errorf("a claim bound by its user is marked bound by the controller: %v", claim.Annotations)
	}
	waitEvent(t, c, `PersistentVolumeClaim misfit Warning VolumeMismatch: Cannot bind to requested volume "small": requested PV is too small`)
}

// TestWaitForFirstConsumer: claims of such a class wait for the scheduler.
func TestWaitForFirstConsumer(t *testing.T) {
	wffc := storagev1.VolumeBindingWaitForFirstConsumer
	class := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "local"}, Provisioner: "kubernetes.io/no-provisioner", VolumeBindingMode: &wffc}
	c := start(t, class, pv("local", "1Gi", volClass("local")), pvc("later", "1Gi", claimClass("local")))
	waitEvent(t, c, "PersistentVolumeClaim later Normal WaitForFirstConsumer: waiting for first consumer to be created before binding")
	// The scheduler's pre-binding completes it.
	vol, err := getPV(t.Context(), c, "local")
	if err != nil {
		t.Fatal(err)
	}
	vol.Spec.ClaimRef = &v1.ObjectReference{Namespace: "default", Name: "later", UID: "uid-later"}
	if _, err := c.CoreV1().PersistentVolumes().Update(t.Context(), vol, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	ctrltest.Eventually(t, "claim bound", func(ctx context.Context) (bool, string) {
		claim, err := getPVC(ctx, c, "later")
		return err == nil && claim.Status.Phase == v1.ClaimBound && claim.Spec.VolumeName == "local", claimState(claim, err)
	})
}
