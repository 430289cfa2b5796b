package persistentvolume

import (
	"context"
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"
	storagehelpers "k8s.io/component-helpers/storage/volume"
)

// Upstream's event reasons and messages on claims.
const (
	reasonFailedBinding        = "FailedBinding"
	reasonWaitForFirstConsumer = "WaitForFirstConsumer"
	reasonProvisioningFailed   = "ProvisioningFailed"
	reasonExternalProvisioning = "ExternalProvisioning"
	reasonVolumeMismatch       = "VolumeMismatch"
	reasonClaimLost            = "ClaimLost"
	reasonClaimMisbound        = "ClaimMisbound"

	msgNoVolumeNoClass  = "no persistent volumes available for this claim and no storage class is set"
	msgWaitForConsumer  = "waiting for first consumer to be created before binding"
	msgLostReference    = "Bound claim has lost reference to PersistentVolume. Data on the volume is lost!"
	msgLostVolume       = "Bound claim has lost its PersistentVolume. Data on the volume is lost!"
	msgMisbound         = "Two claims are bound to the same volume, this one is bound incorrectly"
	msgExternalProvider = "Waiting for a volume to be created either by the external provisioner '%s' " +
		"or manually by the system administrator. If volume creation is delayed, please verify that the " +
		"provisioner is running and correctly registered."
)

func (c *Controller) syncClaimKey(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return err
	}
	claim, err := c.claims.PersistentVolumeClaims(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil // its volume is released by the volume's sync
	}
	if err != nil {
		return err
	}
	if metav1.HasAnnotation(claim.ObjectMeta, storagehelpers.AnnBindCompleted) {
		return c.syncBoundClaim(ctx, claim)
	}
	return c.syncUnboundClaim(ctx, claim)
}

// syncUnboundClaim binds a claim that has not completed binding.
func (c *Controller) syncUnboundClaim(ctx context.Context, claim *v1.PersistentVolumeClaim) error {
	if claim.Spec.VolumeName != "" {
		return c.syncRequestedVolume(ctx, claim)
	}
	delay, err := storagehelpers.IsDelayBindingMode(claim, c.classes)
	if err != nil {
		return err
	}
	volumes, err := c.volumes.List(labels.Everything())
	if err != nil {
		return err
	}
	pv, err := findBestMatch(claim, volumes, delay)
	if err != nil {
		return err
	}
	if pv != nil {
		return c.bind(ctx, pv, claim)
	}
	class := storagehelpers.GetPersistentVolumeClaimClass(claim)
	switch {
	case delay && !storagehelpers.IsDelayBindingProvisioning(claim):
		c.recorder.Event(claim, v1.EventTypeNormal, reasonWaitForFirstConsumer, msgWaitForConsumer)
	case class != "":
		c.reportNoProvisioner(claim, class)
	default:
		c.recorder.Event(claim, v1.EventTypeNormal, reasonFailedBinding, msgNoVolumeNoClass)
	}
	_, err = c.updateClaimStatus(ctx, claim, v1.ClaimPending, nil)
	return err
}

// reportNoProvisioner says why no volume is provisioned for a claim of a
// class, as upstream's provisioning does when it has no plugin: the class
// is missing, or its in-tree (kubernetes.io/) provisioner does not exist
// here, or another provisioner is expected to create the volume.
func (c *Controller) reportNoProvisioner(claim *v1.PersistentVolumeClaim, class string) {
	sc, err := c.classes.Get(class)
	switch {
	case err != nil:
		c.recorder.Event(claim, v1.EventTypeWarning, reasonProvisioningFailed, err.Error())
	case strings.HasPrefix(sc.Provisioner, "kubernetes.io/"):
		c.recorder.Event(claim, v1.EventTypeWarning, reasonProvisioningFailed, "no volume plugin matched name: "+sc.Provisioner)
	default:
		c.recorder.Event(claim, v1.EventTypeNormal, reasonExternalProvisioning, fmt.Sprintf(msgExternalProvider, sc.Provisioner))
	}
}

// syncRequestedVolume binds a claim to the volume it names, when that
// volume is free (or already its) and fits.
func (c *Controller) syncRequestedVolume(ctx context.Context, claim *v1.PersistentVolumeClaim) error {
	pv, err := c.volumes.Get(claim.Spec.VolumeName)
	if apierrors.IsNotFound(err) {
		_, err = c.updateClaimStatus(ctx, claim, v1.ClaimPending, nil) // it may appear later
		return err
	}
	if err != nil {
		return err
	}
	switch {
	case pv.Spec.ClaimRef == nil:
		if err := checkVolumeSatisfyClaim(pv, claim); err != nil {
			c.recorder.Event(claim, v1.EventTypeWarning, reasonVolumeMismatch, fmt.Sprintf("Cannot bind to requested volume %q: %s", pv.Name, err))
			_, err = c.updateClaimStatus(ctx, claim, v1.ClaimPending, nil)
			return err
		}
		return c.bind(ctx, pv, claim)
	case storagehelpers.IsVolumeBoundToClaim(pv, claim):
		return c.bind(ctx, pv, claim)
	case !metav1.HasAnnotation(claim.ObjectMeta, storagehelpers.AnnBoundByController):
		// Claimed by another; the user asked for it: wait.
		_, err = c.updateClaimStatus(ctx, claim, v1.ClaimPending, nil)
		return err
	}
	return fmt.Errorf("invalid binding of claim %s/%s to volume %q: volume already claimed by %s/%s",
		claim.Namespace, claim.Name, pv.Name, pv.Spec.ClaimRef.Namespace, pv.Spec.ClaimRef.Name)
}

// syncBoundClaim checks a claim that completed binding: its volume must
// still exist and point back at it.
func (c *Controller) syncBoundClaim(ctx context.Context, claim *v1.PersistentVolumeClaim) error {
	if claim.Spec.VolumeName == "" {
		return c.updateClaimStatusWithEvent(ctx, claim, v1.ClaimLost, v1.EventTypeWarning, reasonClaimLost, msgLostReference)
	}
	pv, err := c.volumes.Get(claim.Spec.VolumeName)
	if apierrors.IsNotFound(err) {
		return c.updateClaimStatusWithEvent(ctx, claim, v1.ClaimLost, v1.EventTypeWarning, reasonClaimLost, msgLostVolume)
	}
	if err != nil {
		return err
	}
	if pv.Spec.ClaimRef == nil || pv.Spec.ClaimRef.UID == claim.UID {
		return c.bind(ctx, pv, claim) // repair, or nothing to do
	}
	return c.updateClaimStatusWithEvent(ctx, claim, v1.ClaimLost, v1.EventTypeWarning, reasonClaimMisbound, msgMisbound)
}
