package endpoint

import (
	"context"
	"fmt"
	"maps"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/conversion"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"
)

// sync writes the Endpoints of one service.
func (c *Controller) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	svc, err := c.services.Services(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return c.serviceGone(ctx, ns, name)
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
	// Before the no-op check: the tracker must see every sync.
	trigger := c.triggers.Compute(svc, pods)
	subsets := desiredSubsets(svc, pods, c.log)

	current, err := c.endpoints.Endpoints(ns).Get(name)
	switch {
	case apierrors.IsNotFound(err):
		current = &v1.Endpoints{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: svc.Labels}}
	case err != nil:
		return err
	case c.stale.isStale(current):
		return fmt.Errorf("endpoints informer cache is out of date: resource version %s of %s already written over", current.ResourceVersion, key)
	}
	create := current.ResourceVersion == ""
	if !create && upToDate(current, svc, subsets) {
		return nil
	}
	return c.write(ctx, current, desiredEndpoints(current, svc, subsets, trigger), create)
}

// serviceGone deletes the Endpoints of a deleted service. (One deleted
// while the controller was down is caught by queueLeftovers.)
func (c *Controller) serviceGone(ctx context.Context, ns, name string) error {
	err := c.client.CoreV1().Endpoints(ns).Delete(ctx, name, metav1.DeleteOptions{}) //nolint:staticcheck // core/v1 Endpoints
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete endpoints %s/%s: %w", ns, name, err)
	}
	c.triggers.Forget(ns, name)
	c.stale.forget(ns, name)
	return nil
}

// semanticIgnoringRV compares subsets but not the targetRefs'
// resourceVersion, so that pod writes that change nothing here (an
// annotation) cause no Endpoints write.
var semanticIgnoringRV = conversion.EqualitiesOrDie(func(a, b v1.ObjectReference) bool {
	a.ResourceVersion, b.ResourceVersion = "", ""
	return a == b
})

func upToDate(current *v1.Endpoints, svc *v1.Service, subsets []v1.EndpointSubset) bool {
	// The headless label is ours, not the service's.
	own := maps.Clone(current.Labels)
	delete(own, v1.IsHeadlessService)
	return semanticIgnoringRV.DeepEqual(current.Subsets, subsets) &&
		equality.Semantic.DeepEqual(own, svc.Labels) &&
		capacityAnnotationRight(current)
}

// capacityAnnotationRight: an object at or under capacity carries no
// over-capacity annotation (one over it is rewritten, truncated).
func capacityAnnotationRight(ep *v1.Endpoints) bool {
	_, annotated := ep.Annotations[v1.EndpointsOverCapacity]
	return countAddresses(ep.Subsets) <= maxCapacity && !annotated
}

// desiredEndpoints is current with the new subsets, the service's labels
// and the annotations this controller owns.
func desiredEndpoints(current *v1.Endpoints, svc *v1.Service, subsets []v1.EndpointSubset, trigger time.Time) *v1.Endpoints {
	ep := current.DeepCopy()
	ep.Subsets = subsets
	ep.Labels = maps.Clone(svc.Labels)
	if ep.Labels == nil {
		ep.Labels = map[string]string{}
	}
	if svc.Spec.ClusterIP == v1.ClusterIPNone || svc.Spec.ClusterIP == "" {
		ep.Labels[v1.IsHeadlessService] = ""
	}
	if ep.Annotations == nil {
		ep.Annotations = map[string]string{}
	}
	if trigger.IsZero() {
		delete(ep.Annotations, v1.EndpointsLastChangeTriggerTime)
	} else {
		ep.Annotations[v1.EndpointsLastChangeTriggerTime] = trigger.UTC().Format(time.RFC3339Nano)
	}
	if truncate(ep) {
		ep.Annotations[v1.EndpointsOverCapacity] = "truncated"
	} else {
		delete(ep.Annotations, v1.EndpointsOverCapacity)
	}
	return ep
}

// write creates or updates the Endpoints; on failure it records upstream's
// warning event on them.
func (c *Controller) write(ctx context.Context, current, ep *v1.Endpoints, create bool) error {
	client := c.client.CoreV1().Endpoints(ep.Namespace) //nolint:staticcheck // core/v1 Endpoints
	var err error
	var updated *v1.Endpoints
	if create {
		_, err = client.Create(ctx, ep, metav1.CreateOptions{})
	} else {
		updated, err = client.Update(ctx, ep, metav1.UpdateOptions{})
	}
	switch {
	case err == nil:
		// The cache still holds current until the update arrives: a sync
		// before then would write over what this one wrote.
		if updated != nil && updated.ResourceVersion != current.ResourceVersion {
			c.stale.mark(current)
		}
		return nil
	case create && apierrors.HasStatusCause(err, v1.NamespaceTerminatingCause):
		return nil // creates will keep failing; the namespace is going
	case create:
		c.recorder.Eventf(ep, v1.EventTypeWarning, "FailedToCreateEndpoint", "Failed to create endpoint for service %v/%v: %v", ep.Namespace, ep.Name, err)
		return fmt.Errorf("create endpoints %s/%s: %w", ep.Namespace, ep.Name, err)
	default:
		c.recorder.Eventf(ep, v1.EventTypeWarning, "FailedToUpdateEndpoint", "Failed to update endpoint %v/%v: %v", ep.Namespace, ep.Name, err)
		return fmt.Errorf("update endpoints %s/%s: %w", ep.Namespace, ep.Name, err)
	}
}
