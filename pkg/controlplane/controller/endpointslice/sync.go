package endpointslice

import (
	"context"
	"errors"

	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"
)

// errStaleCache asks for a retry once the informer has seen this
// controller's writes.
var errStaleCache = errors.New("EndpointSlice informer cache is out of date")

// sync reconciles the slices of one service.
func (c *Controller) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	svc, err := c.services.Services(ns).Get(name)
	if apierrors.IsNotFound(err) {
		// The garbage collector deletes the slices (they are owned).
		c.triggers.Forget(ns, name)
		c.tracker.forget(ns, name)
		return nil
	}
	if err != nil {
		return err
	}
	if svc.Spec.Type == v1.ServiceTypeExternalName || svc.Spec.Selector == nil {
		return nil // ExternalName has no endpoints; without a selector they are the user's
	}
	pods, err := c.pods.Pods(ns).List(labels.Set(svc.Spec.Selector).AsSelectorPreValidated())
	if err != nil {
		return err
	}
	slices, err := c.slices.EndpointSlices(ns).List(labels.Set{
		discovery.LabelServiceName: name, discovery.LabelManagedBy: ControllerName,
	}.AsSelectorPreValidated())
	if err != nil {
		return err
	}
	slices = withoutDeleted(slices)
	if c.tracker.stale(svc, slices) {
		return errStaleCache
	}
	// Before the reconcile: the tracker must see every sync.
	trigger := c.triggers.Compute(svc, pods)
	r := &reconciler{c: c, svc: svc, trigger: trigger}
	if err := r.reconcile(ctx, pods, slices); err != nil {
		c.recorder.Eventf(svc, v1.EventTypeWarning, "FailedToUpdateEndpointSlices",
			"Error updating Endpoint Slices for Service %s/%s: %v", ns, name, err)
		return err
	}
	return nil
}

// withoutDeleted drops slices being deleted, which must not hold the
// controller up.
func withoutDeleted(slices []*discovery.EndpointSlice) []*discovery.EndpointSlice {
	out := make([]*discovery.EndpointSlice, 0, len(slices))
	for _, s := range slices {
		if s.DeletionTimestamp == nil {
			out = append(out, s)
		}
	}
	return out
}
