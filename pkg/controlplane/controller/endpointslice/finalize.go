package endpointslice

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// finalize writes a plan. Creates take over slices about to be deleted
// (of this service and type) as updates instead; no slice is created for
// a service being deleted, which would race the garbage collector.
func (r *reconciler) finalize(ctx context.Context, p plan) error {
	for i := 0; i < len(p.delete) && len(p.create) > 0; {
		old, s := p.delete[i], p.create[len(p.create)-1]
		if old.AddressType != s.AddressType || !ownedBy(old, r.svc) {
			i++
			continue
		}
		s.Name = old.Name
		p.create = p.create[:len(p.create)-1]
		p.update = append(p.update, s)
		p.delete = append(p.delete[:i], p.delete[i+1:]...)
	}
	client := r.c.client.DiscoveryV1().EndpointSlices(r.svc.Namespace)
	if r.svc.DeletionTimestamp == nil {
		for _, s := range p.create {
			setTrigger(s, r.trigger)
			created, err := client.Create(ctx, s, metav1.CreateOptions{})
			if apierrors.HasStatusCause(err, v1.NamespaceTerminatingCause) {
				return nil // creates will keep failing; the namespace is going
			}
			if err != nil {
				return fmt.Errorf("failed to create EndpointSlice for Service %s/%s: %w", r.svc.Namespace, r.svc.Name, err)
			}
			r.c.tracker.wrote(created)
		}
	}
	for _, s := range p.update {
		setTrigger(s, r.trigger)
		updated, err := client.Update(ctx, s, metav1.UpdateOptions{})
		if err != nil {
			return fmt.Errorf("failed to update %s EndpointSlice for Service %s/%s: %w", s.Name, r.svc.Namespace, r.svc.Name, err)
		}
		r.c.tracker.wrote(updated)
	}
	for _, s := range p.delete {
		if err := r.delete(ctx, s); err != nil {
			return err
		}
	}
	return nil
}

// delete deletes a slice; one already gone is fine.
func (r *reconciler) delete(ctx context.Context, s *discovery.EndpointSlice) error {
	err := r.c.client.DiscoveryV1().EndpointSlices(s.Namespace).Delete(ctx, s.Name, metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("failed to delete %s EndpointSlice for Service %s/%s: %w", s.Name, r.svc.Namespace, r.svc.Name, err)
	}
	r.c.tracker.deleted(s)
	return nil
}

// setTrigger sets or clears the last-change trigger time annotation.
func setTrigger(s *discovery.EndpointSlice, at time.Time) {
	if s.Annotations == nil {
		s.Annotations = map[string]string{}
	}
	if at.IsZero() {
		delete(s.Annotations, v1.EndpointsLastChangeTriggerTime)
	} else {
		s.Annotations[v1.EndpointsLastChangeTriggerTime] = at.UTC().Format(time.RFC3339Nano)
	}
}
