package registry

import (
	"errors"
	"fmt"
	"net"

	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	utilnet "k8s.io/utils/net"

	"github.com/nodeagent/nodeagent/pkg/podspec"
)

// errReservedZone: the zone belongs in endpoints[].zone; upstream's
// conversion moves it out of the topology map, so its validation treats
// one left there as an internal error.
var errReservedZone = errors.New("reserved key was not removed in conversion")

func validateSliceEndpoints(eps []discoveryv1.Endpoint, at discoveryv1.AddressType, oldAddrs []string, path *field.Path) field.ErrorList {
	if len(eps) > maxSliceEndpoints {
		return field.ErrorList{field.TooMany(path, len(eps), maxSliceEndpoints)}
	}
	var errs field.ErrorList
	for i, ep := range eps {
		p := path.Index(i)
		ap := p.Child("addresses")
		switch {
		case len(ep.Addresses) == 0:
			errs = append(errs, field.Required(ap, "must contain at least 1 address"))
		case len(ep.Addresses) > maxEndpointAddresses:
			errs = append(errs, field.TooMany(ap, len(ep.Addresses), maxEndpointAddresses))
		}
		for j, addr := range ep.Addresses {
			errs = append(errs, validateSliceAddress(addr, at, oldAddrs, ap.Index(j))...)
		}
		if ep.NodeName != nil {
			errs = append(errs, podspec.InvalidAll(p.Child("nodeName"), *ep.NodeName, apimachineryvalidation.NameIsDNSSubdomain(*ep.NodeName, false))...)
		}
		tp := p.Child("deprecatedTopology")
		if len(ep.DeprecatedTopology) > maxTopologyLabels {
			errs = append(errs, field.TooMany(tp, len(ep.DeprecatedTopology), maxTopologyLabels))
		}
		errs = append(errs, metav1validation.ValidateLabels(ep.DeprecatedTopology, tp)...)
		if _, ok := ep.DeprecatedTopology[v1.LabelTopologyZone]; ok {
			errs = append(errs, field.InternalError(tp.Key(v1.LabelTopologyZone), errReservedZone))
		}
		if ep.Hostname != nil {
			errs = append(errs, dnsLabel(*ep.Hostname, p.Child("hostname"))...)
		}
		if ep.Hints != nil {
			errs = append(errs, validateHints(ep.Hints, p.Child("hints"))...)
		}
	}
	return errs
}

// validateSliceAddress checks an address of the slice's type: IPs of the
// right family that make sense as a destination (not unspecified,
// loopback or link-local), FQDNs. Addresses the old object had pass.
func validateSliceAddress(addr string, at discoveryv1.AddressType, oldAddrs []string, p *field.Path) field.ErrorList {
	switch at {
	case discoveryv1.AddressTypeFQDN:
		return validation.IsFullyQualifiedDomainName(p, addr)
	case discoveryv1.AddressTypeIPv4, discoveryv1.AddressTypeIPv6:
	default:
		return nil // unknown types are reported on addressType
	}
	if errs := validation.IsValidIPForLegacyField(p, addr, false, oldAddrs); len(errs) > 0 {
		return errs
	}
	// Sloppy: leading zeros are legacy-valid. Nil: an old address let through.
	ip := utilnet.ParseIPSloppy(addr)
	if ip == nil {
		return nil
	}
	if v4 := ip.To4() != nil; v4 != (at == discoveryv1.AddressTypeIPv4) {
		return field.ErrorList{field.Invalid(p, addr, fmt.Sprintf("must be a valid %s address", at))}
	}
	return endpointIP(addr, ip, p)
}

// endpointIP rejects what cannot be a destination, as upstream's
// ValidateEndpointIP.
func endpointIP(addr string, ip net.IP, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if ip.IsUnspecified() {
		errs = append(errs, field.Invalid(p, addr, fmt.Sprintf("may not be unspecified (%v)", addr)))
	}
	if ip.IsLoopback() {
		errs = append(errs, field.Invalid(p, addr, "may not be in the loopback range (127.0.0.0/8, ::1/128)"))
	}
	if ip.IsLinkLocalUnicast() {
		errs = append(errs, field.Invalid(p, addr, "may not be in the link-local range (169.254.0.0/16, fe80::/10)"))
	}
	if ip.IsLinkLocalMulticast() {
		errs = append(errs, field.Invalid(p, addr, "may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)"))
	}
	return errs
}

func validateHints(h *discoveryv1.EndpointHints, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	zp := p.Child("forZones")
	if len(h.ForZones) > maxZoneHints {
		errs = append(errs, field.TooMany(zp, len(h.ForZones), maxZoneHints))
	} else {
		seen := map[string]bool{}
		for i, z := range h.ForZones {
			np := zp.Index(i).Child("name")
			if seen[z.Name] {
				errs = append(errs, field.Duplicate(np, z.Name))
			}
			seen[z.Name] = true
			errs = append(errs, podspec.InvalidAll(np, z.Name, validation.IsValidLabelValue(z.Name))...)
		}
	}
	np := p.Child("forNodes")
	if len(h.ForNodes) > maxNodeHints {
		return append(errs, field.TooMany(np, len(h.ForNodes), maxNodeHints))
	}
	seen := map[string]bool{}
	for i, n := range h.ForNodes {
		fp := np.Index(i).Child("name")
		if seen[n.Name] {
			errs = append(errs, field.Duplicate(fp, n.Name))
		}
		seen[n.Name] = true
		errs = append(errs, podspec.InvalidAll(fp, n.Name, apimachineryvalidation.NameIsDNSSubdomain(n.Name, false))...)
	}
	return errs
}
