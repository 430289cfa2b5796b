// Package persistentvolume is the PersistentVolume binder, as
// kube-controller-manager's persistentvolume-binder
// (pkg/controller/volume/persistentvolume) without dynamic provisioning.
//
// Claims: an unbound claim gets the best available volume — same storage
// class ("" is no class), every requested access mode, capacity at least
// the request, same volume mode, matching the claim's selector; among the
// volumes with the fewest access modes the smallest wins. A claim that
// names its volume (spec.volumeName) binds to that one if it satisfies the
// claim, else it stays Pending with a VolumeMismatch event. Binding writes,
// in upstream's order: the volume's spec.claimRef (with the claim's UID)
// and pv.kubernetes.io/bound-by-controller, the volume's phase Bound, the
// claim's spec.volumeName with pv.kubernetes.io/bind-completed (and
// bound-by-controller), then the claim's status (Bound, capacity, access
// modes). A claim that finds nothing stays Pending with upstream's events:
// FailedBinding "no persistent volumes available for this claim and no
// storage class is set" without a class; with one, ProvisioningFailed (the
// class is missing, or its provisioner is a kubernetes.io/ one, such as
// kubernetes.io/no-provisioner, which nothing here implements) or
// ExternalProvisioning (another provisioner may create the volume).
// Claims of a WaitForFirstConsumer class wait (WaitForFirstConsumer event)
// until the scheduler pre-binds a volume for a pod's node.
//
// Volumes: an unclaimed one is Available; one whose claim is gone (or was
// recreated with another UID) is Released and then reclaimed by its
// policy: Retain keeps it Released, Delete deletes the PersistentVolume
// object (no storage plugin deletes the data here), Recycle fails with
// upstream's VolumeFailedRecycle event. A bound claim whose volume is gone
// or claimed by another is Lost (ClaimLost, ClaimMisbound events).
//
// Every claim and volume is synced again every SyncPeriod (upstream's
// 15 s), and unbound claims whenever a volume changes.
//
// Use:
//
//	c := persistentvolume.New(client, factory, persistentvolume.Config{}, log)
//	factory.Start(ctx.Done())
//	err := c.Run(ctx)
package persistentvolume
