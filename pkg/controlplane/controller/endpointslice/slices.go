package endpointslice

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/conversion"
)

var serviceKind = v1.SchemeGroupVersion.WithKind("Service")

// newSlice is an empty slice of svc for the address type and ports.
func newSlice(svc *v1.Service, at discovery.AddressType, ports []discovery.EndpointPort) *discovery.EndpointSlice {
	s := &discovery.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName:    slicePrefix(svc.Name),
			Namespace:       svc.Namespace,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(svc, serviceKind)},
		},
		AddressType: at,
		Ports:       ports,
		Endpoints:   []discovery.Endpoint{},
	}
	s.Labels, _ = sliceLabels(s, svc)
	return s
}

// slicePrefix is "<service>-" unless that is too long a name prefix.
func slicePrefix(service string) string {
	if len(apimachineryvalidation.NameIsDNSSubdomain(service+"-", true)) != 0 {
		return service
	}
	return service + "-"
}

// reservedLabels are the slice's own; the service's values for them are
// not copied.
var reservedLabels = []string{discovery.LabelServiceName, discovery.LabelManagedBy, v1.IsHeadlessService}

// sliceLabels are the labels s should carry: the service's, the headless
// marker for services without a cluster IP, and the reserved ones. It
// also reports whether the service's labels differ from those s carries.
func sliceLabels(s *discovery.EndpointSlice, svc *v1.Service) (map[string]string, bool) {
	have, want := maps.Clone(s.Labels), maps.Clone(svc.Labels)
	if want == nil {
		want = map[string]string{}
	}
	for _, k := range reservedLabels {
		delete(have, k)
		delete(want, k)
	}
	changed := !equality.Semantic.DeepEqual(have, want)
	if svc.Spec.ClusterIP == "" || svc.Spec.ClusterIP == v1.ClusterIPNone {
		want[v1.IsHeadlessService] = ""
	}
	want[discovery.LabelServiceName] = svc.Name
	want[discovery.LabelManagedBy] = ControllerName
	return want, changed
}

// ownedBy reports whether svc (this very object, by UID) owns the slice;
// slices of an earlier service of the same name are the garbage
// collector's.
func ownedBy(s *discovery.EndpointSlice, svc *v1.Service) bool {
	for _, o := range s.OwnerReferences {
		if o.UID == svc.UID && o.Kind == serviceKind.Kind && o.APIVersion == serviceKind.Version {
			return true
		}
	}
	return false
}

// isPlaceholder reports whether s is as good as the placeholder p:
// deleting s to create p would change nothing.
func isPlaceholder(s, p *discovery.EndpointSlice) bool {
	return s.Namespace == p.Namespace && s.AddressType == p.AddressType &&
		len(s.Endpoints) == 0 && len(s.Ports) == 0 && maps.Equal(s.Labels, p.Labels)
}

// portsKey identifies a set of ports, whatever their order.
func portsKey(ports []discovery.EndpointPort) string {
	parts := make([]string, 0, len(ports))
	for _, p := range ports {
		parts = append(parts, fmt.Sprintf("%s:%d/%s/%s", deref(p.Name), deref(p.Port), deref(p.Protocol), deref(p.AppProtocol)))
	}
	slices.Sort(parts)
	return strings.Join(parts, ",")
}

// endpointKey identifies an endpoint by what it is (addresses, hostname,
// the pod) so that changes of its other fields (conditions, zone) are
// made in place.
func endpointKey(ep *discovery.Endpoint) string {
	addrs := slices.Sorted(slices.Values(ep.Addresses))
	key := strings.Join(addrs, ",") + "|" + deref(ep.Hostname)
	if ep.TargetRef != nil {
		key += "|" + ep.TargetRef.Namespace + "/" + ep.TargetRef.Name
	}
	return key
}

// semanticIgnoringRV compares target references but not their
// resourceVersion.
var semanticIgnoringRV = conversion.EqualitiesOrDie(func(a, b v1.ObjectReference) bool {
	a.ResourceVersion, b.ResourceVersion = "", ""
	return a == b
})

// sameBeyondKey reports whether endpoints with the same key need no
// rewrite.
func sameBeyondKey(a, b *discovery.Endpoint) bool {
	c1, c2 := a.Conditions, b.Conditions
	return equalPtr(a.NodeName, b.NodeName) && equalPtr(a.Zone, b.Zone) &&
		equalPtr(c1.Ready, c2.Ready) && equalPtr(c1.Serving, c2.Serving) && equalPtr(c1.Terminating, c2.Terminating) &&
		semanticIgnoringRV.DeepEqual(a.TargetRef, b.TargetRef)
}

func equalPtr[T comparable](a, b *T) bool {
	return (a == nil) == (b == nil) && (a == nil || *a == *b)
}

// endpointSet holds desired endpoints by key.
type endpointSet map[string]*discovery.Endpoint

func (s endpointSet) take(ep *discovery.Endpoint) *discovery.Endpoint {
	k := endpointKey(ep)
	got := s[k]
	delete(s, k)
	return got
}

// popSorted removes and returns up to n endpoints, in key order so that
// slices come out the same every time.
func (s endpointSet) popSorted(n int) []discovery.Endpoint {
	keys := slices.Sorted(maps.Keys(s))
	keys = keys[:max(0, min(n, len(keys)))]
	out := make([]discovery.Endpoint, 0, len(keys))
	for _, k := range keys {
		out = append(out, *s[k])
		delete(s, k)
	}
	return out
}
