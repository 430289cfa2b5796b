package endpointslice

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/nodeagent/nodeagent/pkg/controlplane/controller/internal/endpointutil"
)

// reconciler is one sync of one service's slices, as upstream's Reconciler.
type reconciler struct {
	c       *Controller
	svc     *v1.Service
	trigger time.Time
}

// plan is what a sync writes.
type plan struct {
	create, update, delete []*discovery.EndpointSlice
}

func (p *plan) add(q plan) {
	p.create = append(p.create, q.create...)
	p.update = append(p.update, q.update...)
	p.delete = append(p.delete, q.delete...)
}

// reconcile brings the slices of every address type of the service in
// line with pods, and deletes slices of types it no longer has.
func (r *reconciler) reconcile(ctx context.Context, pods []*v1.Pod, existing []*discovery.EndpointSlice) error {
	types := addressTypes(r.svc)
	byType := map[discovery.AddressType][]*discovery.EndpointSlice{}
	var errs []error
	for _, s := range existing {
		if types.Has(s.AddressType) {
			byType[s.AddressType] = append(byType[s.AddressType], s)
		} else if err := r.delete(ctx, s); err != nil {
			errs = append(errs, err)
		}
	}
	for _, at := range sets.List(types) {
		if err := r.reconcileType(ctx, at, pods, byType[at]); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// reconcileType plans and writes the slices of one address type: one
// group of slices per set of ports, a placeholder when there would be no
// slice at all.
func (r *reconciler) reconcileType(ctx context.Context, at discovery.AddressType, pods []*v1.Pod, existing []*discovery.EndpointSlice) error {
	var p plan
	byPorts := map[string][]*discovery.EndpointSlice{}
	for _, s := range existing {
		if ownedBy(s, r.svc) {
			byPorts[portsKey(s.Ports)] = append(byPorts[portsKey(s.Ports)], s)
		} else {
			p.delete = append(p.delete, s) // an earlier service's of the same name
		}
	}
	desired, ports, err := r.desired(at, pods)
	if err != nil && !errors.Is(err, errNodeNotFound) {
		return err
	}
	for _, key := range sortedKeys(desired) {
		p.add(r.fill(byPorts[key], desired[key], at, ports[key]))
	}
	for key, ss := range byPorts {
		if _, ok := desired[key]; !ok {
			p.delete = append(p.delete, ss...)
		}
	}
	if len(existing) == len(p.delete) && len(p.create) == 0 {
		ph := newSlice(r.svc, at, []discovery.EndpointPort{})
		if len(p.delete) == 1 && isPlaceholder(p.delete[0], ph) {
			p.delete = nil // the placeholder is there already
		} else {
			p.create = append(p.create, ph)
		}
	}
	return errors.Join(err, r.finalize(ctx, p))
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

var errNodeNotFound = errors.New("node not found")

// desired groups the pods' endpoints of type at by their ports. Pods on
// nodes the cache does not hold are left out unless the service
// publishes every address: the returned error (errNodeNotFound) retries
// the service while the rest is written.
func (r *reconciler) desired(at discovery.AddressType, pods []*v1.Pod) (map[string]endpointSet, map[string][]discovery.EndpointPort, error) {
	sets, portsOf := map[string]endpointSet{}, map[string][]discovery.EndpointPort{}
	var errs []error
	for _, pod := range pods {
		if !endpointutil.ShouldPodBeInEndpoints(pod, true) {
			continue
		}
		ports := endpointPorts(r.svc, pod)
		key := portsKey(ports)
		if sets[key] == nil {
			sets[key], portsOf[key] = endpointSet{}, ports
		}
		node, err := r.c.nodes.Get(pod.Spec.NodeName)
		switch {
		case apierrors.IsNotFound(err) && !r.svc.Spec.PublishNotReadyAddresses:
			errs = append(errs, fmt.Errorf("skipping Pod %s for Service %s/%s: Node %s Not Found: %w",
				pod.Name, r.svc.Namespace, r.svc.Name, pod.Spec.NodeName, errNodeNotFound))
			continue
		case apierrors.IsNotFound(err):
			node = nil
		case err != nil:
			return nil, nil, err
		}
		ep := podEndpoint(pod, node, r.svc, at)
		if len(ep.Addresses) > 0 {
			sets[key][endpointKey(&ep)] = &ep
		}
	}
	return sets, portsOf, errors.Join(errs...)
}
