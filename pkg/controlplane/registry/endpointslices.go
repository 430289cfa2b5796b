package registry

import (
	"slices"

	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// EndpointSlices (discovery.k8s.io/v1): written by the EndpointSlice
// controller for services with selectors, by users for the others.
func (b *builder) endpointSlices() *Resource {
	return &Resource{
		GVK:        discoveryv1.SchemeGroupVersion.WithKind("EndpointSlice"),
		Plural:     "endpointslices",
		Singular:   "endpointslice",
		Namespaced: true,
		Verbs:      allVerbs,
		New:        func() runtime.Object { return &discoveryv1.EndpointSlice{} },
		NewList:    func() runtime.Object { return &discoveryv1.EndpointSliceList{} },

		Default:          hook(defaultEndpointSlice),
		PrepareForCreate: hook(func(s *discoveryv1.EndpointSlice) { s.Generation = 1 }),
		PrepareForUpdate: hook2(prepareEndpointSliceForUpdate),
		Validate:         check(func(s *discoveryv1.EndpointSlice) field.ErrorList { return validateEndpointSlice(s, nil) }),
		ValidateUpdate:   check2(validateEndpointSliceUpdate),
		FieldSet:         fieldSet[*discoveryv1.EndpointSlice](true, nil),
		Table:            table(endpointSliceColumns, b.endpointSliceRow),
	}
}

// defaultEndpointSlice: ports are named "" and TCP unless said otherwise.
func defaultEndpointSlice(s *discoveryv1.EndpointSlice) {
	for i := range s.Ports {
		p := &s.Ports[i]
		if p.Name == nil {
			name := ""
			p.Name = &name
		}
		if p.Protocol == nil {
			proto := v1.ProtocolTCP
			p.Protocol = &proto
		}
	}
}

// prepareEndpointSliceForUpdate bumps the generation when anything but
// metadata changes, or the labels (consumers, the EndpointSlice
// controller among them, tell their own writes apart by generation).
func prepareEndpointSliceForUpdate(s, old *discoveryv1.EndpointSlice) {
	a, b := *s, *old
	a.ObjectMeta, b.ObjectMeta = metav1.ObjectMeta{}, metav1.ObjectMeta{}
	a.TypeMeta, b.TypeMeta = metav1.TypeMeta{}, metav1.TypeMeta{}
	if !equality.Semantic.DeepEqual(a, b) || !equality.Semantic.DeepEqual(s.Labels, old.Labels) {
		s.Generation = old.Generation + 1
	}
}

func validateEndpointSliceUpdate(s, old *discoveryv1.EndpointSlice) field.ErrorList {
	errs := validateMetaUpdate(&s.ObjectMeta, &old.ObjectMeta)
	errs = append(errs, validateEndpointSlice(s, old)...)
	return append(errs, apimachineryvalidation.ValidateImmutableField(s.AddressType, old.AddressType, field.NewPath("addressType"))...)
}

var (
	addressTypes = []discoveryv1.AddressType{discoveryv1.AddressTypeFQDN, discoveryv1.AddressTypeIPv4, discoveryv1.AddressTypeIPv6}
	// Upstream's limits.
	maxSliceEndpoints, maxEndpointAddresses, maxSlicePorts = 1000, 100, 20000
	maxTopologyLabels, maxZoneHints, maxNodeHints          = 16, 8, 8
)

// validateEndpointSlice is upstream's discovery validation; old (nil on
// create) lets addresses stored before the IP rules tightened stay.
func validateEndpointSlice(s, old *discoveryv1.EndpointSlice) field.ErrorList {
	errs := validateMeta(&s.ObjectMeta, true, apimachineryvalidation.NameIsDNSSubdomain)
	p := field.NewPath("addressType")
	switch {
	case s.AddressType == "":
		errs = append(errs, field.Required(p, ""))
	case !slices.Contains(addressTypes, s.AddressType):
		errs = append(errs, field.NotSupported(p, s.AddressType, addressTypes))
	}
	errs = append(errs, validateSliceEndpoints(s.Endpoints, s.AddressType, oldAddresses(old), field.NewPath("endpoints"))...)
	return append(errs, validateSlicePorts(s.Ports, field.NewPath("ports"))...)
}

func oldAddresses(old *discoveryv1.EndpointSlice) []string {
	if old == nil {
		return nil
	}
	var out []string
	for _, ep := range old.Endpoints {
		out = append(out, ep.Addresses...)
	}
	return out
}

func validateSlicePorts(ports []discoveryv1.EndpointPort, path *field.Path) field.ErrorList {
	if len(ports) > maxSlicePorts {
		return field.ErrorList{field.TooMany(path, len(ports), maxSlicePorts)}
	}
	var errs field.ErrorList
	names := map[string]bool{}
	for i, port := range ports {
		p := path.Index(i)
		name := ptrOr(port.Name, "")
		if name != "" {
			errs = append(errs, dnsLabel(name, p.Child("name"))...)
		}
		if names[name] {
			errs = append(errs, field.Duplicate(p.Child("name"), name))
		}
		names[name] = true
		switch {
		case port.Protocol == nil:
			errs = append(errs, field.Required(p.Child("protocol"), ""))
		case !slices.Contains(portProtocols, *port.Protocol):
			errs = append(errs, field.NotSupported(p.Child("protocol"), *port.Protocol, portProtocols))
		}
		if port.AppProtocol != nil {
			errs = append(errs, qualifiedName(*port.AppProtocol, p.Child("appProtocol"))...)
		}
	}
	return errs
}

func ptrOr[T any](p *T, def T) T {
	if p == nil {
		return def
	}
	return *p
}
