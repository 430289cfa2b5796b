package persistentvolume

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	storagehelpers "k8s.io/component-helpers/storage/volume"
)

// Upstream's event on a volume that cannot be recycled.
const (
	reasonVolumeFailedRecycle = "VolumeFailedRecycle"
	msgNoRecycler             = "No recycler plugin found for the volume!"
)

func (c *Controller) syncVolumeKey(ctx context.Context, name string) error {
	pv, err := c.volumes.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	return c.syncVolume(ctx, pv)
}

// syncVolume keeps a volume's phase in step with its claim.
func (c *Controller) syncVolume(ctx context.Context, pv *v1.PersistentVolume) error {
	ref := pv.Spec.ClaimRef
	if ref == nil || ref.UID == "" {
		// Unused, or pre-bound to a claim that the claim's sync binds.
		_, err := c.updateVolumePhase(ctx, pv, v1.VolumeAvailable, "")
		return err
	}
	claim, err := c.volumeClaim(ctx, pv)
	if err != nil {
		return err
	}
	switch {
	case claim == nil:
		return c.releaseVolume(ctx, pv)
	case claim.Spec.VolumeName == "":
		// Binding half done: the claim's sync finishes it.
		c.claimQ.Add(claim.Namespace + "/" + claim.Name)
		return nil
	case claim.Spec.VolumeName == pv.Name:
		_, err := c.updateVolumePhase(ctx, pv, v1.VolumeBound, "")
		return err
	}
	// The claim is bound to another volume.
	if metav1.HasAnnotation(pv.ObjectMeta, storagehelpers.AnnDynamicallyProvisioned) && pv.Spec.PersistentVolumeReclaimPolicy == v1.PersistentVolumeReclaimDelete {
		return c.releaseVolume(ctx, pv)
	}
	return c.unbindVolume(ctx, pv)
}

// volumeClaim returns the claim the volume is bound to, nil when it is
// gone or was recreated under the same name. A claim missing from the
// cache is looked up on the API server before the volume is released: a
// claim just created may not be in the cache yet.
func (c *Controller) volumeClaim(ctx context.Context, pv *v1.PersistentVolume) (*v1.PersistentVolumeClaim, error) {
	ref := pv.Spec.ClaimRef
	claim, err := c.claims.PersistentVolumeClaims(ref.Namespace).Get(ref.Name)
	if apierrors.IsNotFound(err) && pv.Status.Phase != v1.VolumeReleased && pv.Status.Phase != v1.VolumeFailed {
		claim, err = c.client.CoreV1().PersistentVolumeClaims(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	}
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("claim %s/%s of volume %s: %w", ref.Namespace, ref.Name, pv.Name, err)
	case claim.UID != ref.UID:
		return nil, nil
	}
	return claim, nil
}

// releaseVolume marks a volume whose claim is gone Released (a Failed one
// stays Failed) and applies its reclaim policy.
func (c *Controller) releaseVolume(ctx context.Context, pv *v1.PersistentVolume) error {
	if pv.Status.Phase != v1.VolumeReleased && pv.Status.Phase != v1.VolumeFailed {
		c.log.Info("volume released", "volume", pv.Name, "reclaimPolicy", pv.Spec.PersistentVolumeReclaimPolicy)
		var err error
		if pv, err = c.updateVolumePhase(ctx, pv, v1.VolumeReleased, ""); err != nil {
			return err
		}
	}
	return c.reclaimVolume(ctx, pv)
}

// reclaimVolume: Retain keeps the volume for its administrator; Delete
// removes the PersistentVolume object (there is no storage plugin here
// to delete the data); Recycle is not implemented.
func (c *Controller) reclaimVolume(ctx context.Context, pv *v1.PersistentVolume) error {
	switch pv.Spec.PersistentVolumeReclaimPolicy {
	case v1.PersistentVolumeReclaimDelete:
		uid := pv.UID
		err := c.client.CoreV1().PersistentVolumes().Delete(ctx, pv.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete released volume %s: %w", pv.Name, err)
		}
		c.log.Info("released volume deleted", "volume", pv.Name)
	case v1.PersistentVolumeReclaimRecycle:
		return c.updateVolumePhaseWithEvent(ctx, pv, v1.VolumeFailed, v1.EventTypeWarning, reasonVolumeFailedRecycle, msgNoRecycler)
	}
	return nil
}

// unbindVolume frees a volume whose claim went to another volume: a
// binding made here is undone; a user's pre-binding only loses the UID.
func (c *Controller) unbindVolume(ctx context.Context, pv *v1.PersistentVolume) error {
	clone := pv.DeepCopy()
	if metav1.HasAnnotation(pv.ObjectMeta, storagehelpers.AnnBoundByController) {
		clone.Spec.ClaimRef = nil
		delete(clone.Annotations, storagehelpers.AnnBoundByController)
		if len(clone.Annotations) == 0 {
			clone.Annotations = nil
		}
	} else {
		clone.Spec.ClaimRef.UID = ""
	}
	updated, err := c.client.CoreV1().PersistentVolumes().Update(ctx, clone, metav1.UpdateOptions{})
	if err != nil {
		return fmt.Errorf("unbind volume %s: %w", pv.Name, err)
	}
	_, err = c.updateVolumePhase(ctx, updated, v1.VolumeAvailable, "")
	return err
}
