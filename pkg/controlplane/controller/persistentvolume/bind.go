package persistentvolume

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	storagehelpers "k8s.io/component-helpers/storage/volume"
)

// bind binds volume and claim in upstream's order, each step only when
// needed, so that a failed step is finished by the next sync of either.
func (c *Controller) bind(ctx context.Context, pv *v1.PersistentVolume, claim *v1.PersistentVolumeClaim) error {
	pv, err := c.bindVolumeToClaim(ctx, pv, claim)
	if err != nil {
		return err
	}
	if pv, err = c.updateVolumePhase(ctx, pv, v1.VolumeBound, ""); err != nil {
		return err
	}
	if claim, err = c.bindClaimToVolume(ctx, claim, pv); err != nil {
		return err
	}
	if _, err = c.updateClaimStatus(ctx, claim, v1.ClaimBound, pv); err != nil {
		return err
	}
	c.log.Info("claim bound", "claim", claim.Namespace+"/"+claim.Name, "volume", pv.Name)
	return nil
}

// bindVolumeToClaim sets spec.claimRef (with the claim's UID) and marks
// the binding as the controller's unless the volume was pre-bound.
func (c *Controller) bindVolumeToClaim(ctx context.Context, pv *v1.PersistentVolume, claim *v1.PersistentVolumeClaim) (*v1.PersistentVolume, error) {
	clone, dirty, err := storagehelpers.GetBindVolumeToClaim(pv, claim)
	if err != nil || !dirty {
		return pv, err
	}
	updated, err := c.client.CoreV1().PersistentVolumes().Update(ctx, clone, metav1.UpdateOptions{})
	if err != nil {
		return nil, fmt.Errorf("bind volume %s to claim %s/%s: %w", pv.Name, claim.Namespace, claim.Name, err)
	}
	return updated, nil
}

// bindClaimToVolume sets spec.volumeName and the bind-completed and
// bound-by-controller annotations.
func (c *Controller) bindClaimToVolume(ctx context.Context, claim *v1.PersistentVolumeClaim, pv *v1.PersistentVolume) (*v1.PersistentVolumeClaim, error) {
	clone := claim.DeepCopy()
	dirty := false
	if claim.Spec.VolumeName != pv.Name {
		clone.Spec.VolumeName = pv.Name
		if !metav1.HasAnnotation(clone.ObjectMeta, storagehelpers.AnnBoundByController) {
			metav1.SetMetaDataAnnotation(&clone.ObjectMeta, storagehelpers.AnnBoundByController, "yes")
		}
		dirty = true
	}
	if !metav1.HasAnnotation(clone.ObjectMeta, storagehelpers.AnnBindCompleted) {
		metav1.SetMetaDataAnnotation(&clone.ObjectMeta, storagehelpers.AnnBindCompleted, "yes")
		dirty = true
	}
	if !dirty {
		return claim, nil
	}
	updated, err := c.client.CoreV1().PersistentVolumeClaims(claim.Namespace).Update(ctx, clone, metav1.UpdateOptions{})
	if err != nil {
		return nil, fmt.Errorf("bind claim %s/%s to volume %s: %w", claim.Namespace, claim.Name, pv.Name, err)
	}
	return updated, nil
}

// updateClaimStatus sets the phase and, from the volume (nil: none), the
// capacity and access modes.
func (c *Controller) updateClaimStatus(ctx context.Context, claim *v1.PersistentVolumeClaim, phase v1.PersistentVolumeClaimPhase, pv *v1.PersistentVolume) (*v1.PersistentVolumeClaim, error) {
	clone := claim.DeepCopy()
	clone.Status.Phase = phase
	if pv == nil {
		clone.Status.AccessModes, clone.Status.Capacity = nil, nil
	} else {
		if _, ok := pv.Spec.Capacity[v1.ResourceStorage]; !ok {
			return nil, fmt.Errorf("PersistentVolume %q is without a storage capacity", pv.Name)
		}
		clone.Status.AccessModes = pv.Spec.AccessModes
		if got, want := claim.Status.Capacity[v1.ResourceStorage], pv.Spec.Capacity[v1.ResourceStorage]; got.Cmp(want) != 0 {
			clone.Status.Capacity = pv.Spec.Capacity
		}
	}
	if equality.Semantic.DeepEqual(clone.Status, claim.Status) {
		return claim, nil
	}
	updated, err := c.client.CoreV1().PersistentVolumeClaims(claim.Namespace).UpdateStatus(ctx, clone, metav1.UpdateOptions{})
	if err != nil {
		return nil, fmt.Errorf("set claim %s/%s %s: %w", claim.Namespace, claim.Name, phase, err)
	}
	return updated, nil
}

// updateClaimStatusWithEvent changes the phase and records the event only
// when the phase changes, as upstream.
func (c *Controller) updateClaimStatusWithEvent(ctx context.Context, claim *v1.PersistentVolumeClaim, phase v1.PersistentVolumeClaimPhase, eventType, reason, message string) error {
	if claim.Status.Phase == phase {
		return nil
	}
	updated, err := c.updateClaimStatus(ctx, claim, phase, nil)
	if err != nil {
		return err
	}
	c.recorder.Event(updated, eventType, reason, message)
	return nil
}

func (c *Controller) updateVolumePhase(ctx context.Context, pv *v1.PersistentVolume, phase v1.PersistentVolumePhase, message string) (*v1.PersistentVolume, error) {
	if pv.Status.Phase == phase && pv.Status.Message == message {
		return pv, nil
	}
	clone := pv.DeepCopy()
	clone.Status.Phase, clone.Status.Message = phase, message
	updated, err := c.client.CoreV1().PersistentVolumes().UpdateStatus(ctx, clone, metav1.UpdateOptions{})
	if err != nil {
		return nil, fmt.Errorf("set volume %s %s: %w", pv.Name, phase, err)
	}
	return updated, nil
}

// updateVolumePhaseWithEvent records the event only when the phase changes.
func (c *Controller) updateVolumePhaseWithEvent(ctx context.Context, pv *v1.PersistentVolume, phase v1.PersistentVolumePhase, eventType, reason, message string) error {
	if pv.Status.Phase == phase {
		return nil
	}
	updated, err := c.updateVolumePhase(ctx, pv, phase, message)
	if err != nil {
		return err
	}
	c.recorder.Event(updated, eventType, reason, message)
	return nil
}
