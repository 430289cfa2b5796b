package endpointutil

import (
	"reflect"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/sets"
	corelisters "k8s.io/client-go/listers/core/v1"

	"github.com/nodeagent/nodeagent/pkg/controlplane/controller/internal/ctrlutil"
)

// ServicesSelecting returns the keys of the services in ns whose selector
// matches set. A nil selector selects nothing: such services have their
// endpoints written by hand.
func ServicesSelecting(lister corelisters.ServiceLister, ns string, set labels.Set) (sets.Set[string], error) {
	list, err := lister.Services(ns).List(labels.Everything())
	if err != nil {
		return nil, err
	}
	keys := sets.New[string]()
	for _, svc := range list {
		if svc.Spec.Selector != nil && labels.ValidatedSetSelector(svc.Spec.Selector).Matches(set) {
			keys.Insert(ctrlutil.Key(svc))
		}
	}
	return keys, nil
}

// ServicesForPodChange returns the keys of the services a pod event
// concerns; old is nil for an add, cur for a delete (either may be a
// tombstone). An update that changes nothing endpoints show concerns
// none; a label change concerns the services gained and lost, and all of
// old and new ones if the endpoint changed too.
func ServicesForPodChange(lister corelisters.ServiceLister, old, cur any) (sets.Set[string], error) {
	oldPod, _ := ctrlutil.Unwrap(old).(*v1.Pod)
	pod, _ := ctrlutil.Unwrap(cur).(*v1.Pod)
	switch {
	case oldPod == nil && pod == nil:
		return nil, nil
	case oldPod == nil:
		return ServicesSelecting(lister, pod.Namespace, pod.Labels)
	case pod == nil:
		return ServicesSelecting(lister, oldPod.Namespace, oldPod.Labels)
	case pod.ResourceVersion == oldPod.ResourceVersion:
		return nil, nil // a resync: the services resync themselves
	}
	podChanged, labelsChanged := podEndpointsChanged(oldPod, pod)
	if !podChanged && !labelsChanged {
		return nil, nil
	}
	now, err := ServicesSelecting(lister, pod.Namespace, pod.Labels)
	if err != nil || !labelsChanged {
		return now, err
	}
	before, err := ServicesSelecting(lister, oldPod.Namespace, oldPod.Labels)
	if err != nil {
		return nil, err
	}
	if podChanged {
		return now.Union(before), nil
	}
	return now.SymmetricDifference(before), nil
}

// podEndpointsChanged reports whether the change moves the pod's endpoint
// (deletion, readiness, IPs) and whether it may change the services that
// select it (labels; hostname and subdomain, which name the service whose
// addresses carry the hostname). Name, namespace and UID are immutable,
// and nodeName is set before the pod has an IP.
func podEndpointsChanged(old, cur *v1.Pod) (podChanged, labelsChanged bool) {
	labelsChanged = !reflect.DeepEqual(old.Labels, cur.Labels) ||
		old.Spec.Hostname != cur.Spec.Hostname || old.Spec.Subdomain != cur.Spec.Subdomain
	podChanged = !old.DeletionTimestamp.Equal(cur.DeletionTimestamp) ||
		IsPodReady(old) != IsPodReady(cur) || !samePodIPs(old, cur)
	return podChanged, labelsChanged
}

func samePodIPs(a, b *v1.Pod) bool {
	if len(a.Status.PodIPs) != len(b.Status.PodIPs) {
		return false
	}
	for i := range a.Status.PodIPs {
		if a.Status.PodIPs[i].IP != b.Status.PodIPs[i].IP {
			return false
		}
	}
	return true
}
