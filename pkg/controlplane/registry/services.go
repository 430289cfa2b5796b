package registry

import (
	"fmt"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ServiceClusterIPRange is the range services' cluster IPs come from
// (kube-apiserver's --service-cluster-ip-range; kubeadm's default). The
// API server allocates from it; no node may have it in a serving
// certificate (pkg/controlplane/controller/certificates).
const ServiceClusterIPRange = "10.96.0.0/12"

func (b *builder) services() *Resource {
	r := &Resource{
		GVK:          v1.SchemeGroupVersion.WithKind("Service"),
		Plural:       "services",
		Singular:     "service",
		ShortNames:   []string{"svc"},
		Categories:   categoriesAll,
		Namespaced:   true,
		Verbs:        noCollDelete, // deletecollection would skip IP/port release
		Subresources: []string{"proxy", "status"},
		New:          func() runtime.Object { return &v1.Service{} },
		NewList:      func() runtime.Object { return &v1.ServiceList{} },

		Default:                hook(defaultService),
		PrepareForCreate:       hook(func(s *v1.Service) { s.Status = v1.ServiceStatus{}; normalizeClusterIPs(s) }),
		PrepareForUpdate:       hook2(prepareServiceForUpdate),
		PrepareForStatusUpdate: hook2(func(s, old *v1.Service) { s.Spec = old.Spec }),
		Validate:               check(validateService),
		ValidateUpdate:         check2(validateServiceUpdate),
		ValidateStatusUpdate:   check2(validateServiceStatusUpdate),
		FieldSet: fieldSet(true, func(s *v1.Service) fields.Set {
			return fields.Set{"spec.clusterIP": s.Spec.ClusterIP, "spec.type": string(s.Spec.Type)}
		}),
		Table: table(serviceColumns, b.serviceRow),
	}
	r.BeginCreate = b.beginServiceCreate(r)
	return r
}

func externallyAccessible(s *v1.Service) bool {
	t := s.Spec.Type
	return t == v1.ServiceTypeLoadBalancer || t == v1.ServiceTypeNodePort || (t == v1.ServiceTypeClusterIP && len(s.Spec.ExternalIPs) > 0)
}

func defaultService(s *v1.Service) {
	spec := &s.Spec
	if spec.SessionAffinity == "" {
		spec.SessionAffinity = v1.ServiceAffinityNone
	}
	if spec.SessionAffinity == v1.ServiceAffinityNone {
		spec.SessionAffinityConfig = nil
	}
	if spec.SessionAffinity == v1.ServiceAffinityClientIP {
		c := spec.SessionAffinityConfig
		if c == nil || c.ClientIP == nil || c.ClientIP.TimeoutSeconds == nil {
			timeout := v1.DefaultClientIPServiceAffinitySeconds
			spec.SessionAffinityConfig = &v1.SessionAffinityConfig{ClientIP: &v1.ClientIPConfig{TimeoutSeconds: &timeout}}
		}
	}
	if spec.Type == "" {
		spec.Type = v1.ServiceTypeClusterIP
	}
	for i := range spec.Ports {
		p := &spec.Ports[i]
		if p.Protocol == "" {
			p.Protocol = v1.ProtocolTCP
		}
		if p.TargetPort == intstr.FromInt32(0) || p.TargetPort == intstr.FromString("") {
			p.TargetPort = intstr.FromInt32(p.Port)
		}
	}
	if externallyAccessible(s) && spec.ExternalTrafficPolicy == "" {
		spec.ExternalTrafficPolicy = v1.ServiceExternalTrafficPolicyCluster
	}
	if spec.InternalTrafficPolicy == nil && spec.Type != v1.ServiceTypeExternalName {
		policy := v1.ServiceInternalTrafficPolicyCluster
		spec.InternalTrafficPolicy = &policy
	}
	if spec.Type == v1.ServiceTypeLoadBalancer && spec.AllocateLoadBalancerNodePorts == nil {
		allocate := true
		spec.AllocateLoadBalancerNodePorts = &allocate
	}
}

// normalizeClusterIPs keeps clusterIP and clusterIPs[0] in step when a
// client sets only one of them.
func normalizeClusterIPs(s *v1.Service) {
	switch {
	case s.Spec.ClusterIP != "" && len(s.Spec.ClusterIPs) == 0:
		s.Spec.ClusterIPs = []string{s.Spec.ClusterIP}
	case s.Spec.ClusterIP == "" && len(s.Spec.ClusterIPs) > 0:
		s.Spec.ClusterIP = s.Spec.ClusterIPs[0]
	}
}

func needsNodePorts(s *v1.Service) bool {
	return s.Spec.Type == v1.ServiceTypeNodePort ||
		(s.Spec.Type == v1.ServiceTypeLoadBalancer && (s.Spec.AllocateLoadBalancerNodePorts == nil || *s.Spec.AllocateLoadBalancerNodePorts))
}

// prepareServiceForUpdate keeps status, and carries over the allocated
// cluster IPs, node ports and health-check node port that an update (say
// kubectl apply of a manifest without them) leaves out.
func prepareServiceForUpdate(s, old *v1.Service) {
	s.Status = old.Status
	if s.Spec.Type != v1.ServiceTypeExternalName && old.Spec.Type != v1.ServiceTypeExternalName {
		if s.Spec.ClusterIP == "" && len(s.Spec.ClusterIPs) == 0 {
			s.Spec.ClusterIP, s.Spec.ClusterIPs = old.Spec.ClusterIP, old.Spec.ClusterIPs
		}
		if len(s.Spec.IPFamilies) == 0 {
			s.Spec.IPFamilies = old.Spec.IPFamilies
		}
		if s.Spec.IPFamilyPolicy == nil {
			s.Spec.IPFamilyPolicy = old.Spec.IPFamilyPolicy
		}
	}
	normalizeClusterIPs(s)
	if needsNodePorts(s) && needsNodePorts(old) {
		used := map[int32]bool{}
		for _, p := range s.Spec.Ports {
			used[p.NodePort] = true
		}
		byName := map[string]int32{}
		for _, p := range old.Spec.Ports {
			byName[p.Name] = p.NodePort
		}
		for i := range s.Spec.Ports {
			if p := &s.Spec.Ports[i]; p.NodePort == 0 && !used[byName[p.Name]] {
				p.NodePort = byName[p.Name]
			}
		}
	}
	if s.Spec.HealthCheckNodePort == 0 && s.Spec.Type == v1.ServiceTypeLoadBalancer && old.Spec.Type == v1.ServiceTypeLoadBalancer &&
		s.Spec.ExternalTrafficPolicy == v1.ServiceExternalTrafficPolicyLocal {
		s.Spec.HealthCheckNodePort = old.Spec.HealthCheckNodePort
	}
}

var (
	serviceTypes      = []v1.ServiceType{v1.ServiceTypeClusterIP, v1.ServiceTypeExternalName, v1.ServiceTypeLoadBalancer, v1.ServiceTypeNodePort}
	portProtocols     = []v1.Protocol{v1.ProtocolSCTP, v1.ProtocolTCP, v1.ProtocolUDP}
	sessionAffinities = []v1.ServiceAffinity{v1.ServiceAffinityClientIP, v1.ServiceAffinityNone}
	trafficPolicies   = []string{"Cluster", "Local"}
)

func validateService(s *v1.Service) field.ErrorList {
	errs := validateMeta(&s.ObjectMeta, true, apimachineryvalidation.NameIsDNS1035Label)
	spec := &s.Spec
	sp := field.NewPath("spec")
	headless := spec.ClusterIP == v1.ClusterIPNone

	if !slices.Contains(serviceTypes, spec.Type) {
		errs = append(errs, field.NotSupported(sp.Child("type"), spec.Type, serviceTypes))
	}
	if len(spec.Ports) == 0 && !headless && spec.Type != v1.ServiceTypeExternalName {
		errs = append(errs, field.Required(sp.Child("ports"), ""))
	}
	names := map[string]bool{}
	type portKey struct {
		port     int32
		protocol v1.Protocol
	}
	ports, nodePorts := map[portKey]bool{}, map[portKey]bool{}
	for i, port := range spec.Ports {
		p := sp.Child("ports").Index(i)
		switch {
		case len(spec.Ports) > 1 && port.Name == "":
			errs = append(errs, field.Required(p.Child("name"), ""))
		case port.Name != "":
			errs = append(errs, dnsLabel(port.Name, p.Child("name"))...)
			if names[port.Name] {
				errs = append(errs, field.Duplicate(p.Child("name"), port.Name))
			}
			names[port.Name] = true
		}
		errs = append(errs, portNum(port.Port, p.Child("port"))...)
		if port.Protocol == "" {
			errs = append(errs, field.Required(p.Child("protocol"), ""))
		} else if !slices.Contains(portProtocols, port.Protocol) {
			errs = append(errs, field.NotSupported(p.Child("protocol"), port.Protocol, portProtocols))
		}
		errs = append(errs, portNumOrName(port.TargetPort, p.Child("targetPort"))...)
		if k := (portKey{port.Port, port.Protocol}); ports[k] {
			errs = append(errs, field.Duplicate(p, fmt.Sprintf("%d/%s", port.Port, port.Protocol)))
		} else {
			ports[k] = true
		}
		if port.NodePort != 0 {
			if spec.Type == v1.ServiceTypeClusterIP {
				errs = append(errs, field.Forbidden(p.Child("nodePort"), "may not be used when `type` is 'ClusterIP'"))
			}
			errs = append(errs, portNum(port.NodePort, p.Child("nodePort"))...)
			if k := (portKey{port.NodePort, port.Protocol}); nodePorts[k] {
				errs = append(errs, field.Duplicate(p.Child("nodePort"), port.NodePort))
			} else {
				nodePorts[k] = true
			}
		}
	}

	if spec.Type == v1.ServiceTypeExternalName {
		if len(spec.ClusterIPs) > 0 {
			errs = append(errs, field.Forbidden(sp.Child("clusterIPs"), "may not be set for ExternalName services"))
		}
		if spec.ExternalName == "" {
			errs = append(errs, field.Required(sp.Child("externalName"), ""))
		} else {
			errs = append(errs, dnsSubdomain(strings.TrimSuffix(spec.ExternalName, "."), sp.Child("externalName"))...)
		}
	} else {
		errs = append(errs, validateClusterIPs(s, sp)...)
	}
	for i, ip := range spec.ExternalIPs {
		errs = append(errs, validation.IsValidIPForLegacyField(sp.Child("externalIPs").Index(i), ip, false, nil)...)
	}
	errs = append(errs, metav1validation.ValidateLabels(spec.Selector, sp.Child("selector"))...)

	if spec.SessionAffinity == "" {
		errs = append(errs, field.Required(sp.Child("sessionAffinity"), ""))
	} else if !slices.Contains(sessionAffinities, spec.SessionAffinity) {
		errs = append(errs, field.NotSupported(sp.Child("sessionAffinity"), spec.SessionAffinity, sessionAffinities))
	}
	switch etp := string(spec.ExternalTrafficPolicy); {
	case !externallyAccessible(s) && etp != "":
		errs = append(errs, field.Invalid(sp.Child("externalTrafficPolicy"), etp, "may only be set for externally-accessible services"))
	case externallyAccessible(s) && etp == "":
		errs = append(errs, field.Required(sp.Child("externalTrafficPolicy"), ""))
	case etp != "" && !slices.Contains(trafficPolicies, etp):
		errs = append(errs, field.NotSupported(sp.Child("externalTrafficPolicy"), etp, trafficPolicies))
	}
	if itp := spec.InternalTrafficPolicy; spec.Type != v1.ServiceTypeExternalName {
		if itp == nil {
			errs = append(errs, field.Required(sp.Child("internalTrafficPolicy"), ""))
		} else if !slices.Contains(trafficPolicies, string(*itp)) {
			errs = append(errs, field.NotSupported(sp.Child("internalTrafficPolicy"), *itp, trafficPolicies))
		}
	}
	return errs
}

func validateClusterIPs(s *v1.Service, sp *field.Path) field.ErrorList {
	var errs field.ErrorList
	ips := s.Spec.ClusterIPs
	if len(ips) > 0 && s.Spec.ClusterIP != ips[0] {
		errs = append(errs, field.Invalid(sp.Child("clusterIPs"), ips, "first value must match `clusterIP`"))
	}
	if len(ips) > 2 {
		errs = append(errs, field.Invalid(sp.Child("clusterIPs"), ips, "may only hold up to 2 values"))
	}
	for i, ip := range ips {
		p := sp.Child("clusterIPs").Index(i)
		switch {
		case ip == v1.ClusterIPNone && (i > 0 || len(ips) > 1):
			errs = append(errs, field.Invalid(p, ip, "'None' must be the first and only value"))
		case ip == v1.ClusterIPNone && (s.Spec.Type == v1.ServiceTypeNodePort || s.Spec.Type == v1.ServiceTypeLoadBalancer):
			errs = append(errs, field.Invalid(p, ip, fmt.Sprintf("may not be set to 'None' for %s services", s.Spec.Type)))
		case ip != v1.ClusterIPNone:
			errs = append(errs, validation.IsValidIPForLegacyField(p, ip, false, nil)...)
		}
	}
	return errs
}

func validateServiceUpdate(s, old *v1.Service) field.ErrorList {
	errs := validateMetaUpdate(&s.ObjectMeta, &old.ObjectMeta)
	// The primary cluster IP is fixed once allocated, unless the service
	// turns into or out of ExternalName.
	if s.Spec.Type != v1.ServiceTypeExternalName && old.Spec.Type != v1.ServiceTypeExternalName &&
		len(old.Spec.ClusterIPs) > 0 && (len(s.Spec.ClusterIPs) == 0 || s.Spec.ClusterIPs[0] != old.Spec.ClusterIPs[0]) {
		errs = append(errs, field.Invalid(field.NewPath("spec", "clusterIPs").Index(0), s.Spec.ClusterIPs, "may not change once set"))
	}
	return append(errs, validateService(s)...)
}

func validateServiceStatusUpdate(s, old *v1.Service) field.ErrorList {
	errs := validateMetaUpdate(&s.ObjectMeta, &old.ObjectMeta)
	for i, ing := range s.Status.LoadBalancer.Ingress {
		p := field.NewPath("status", "loadBalancer", "ingress").Index(i)
		if ing.IP != "" {
			errs = append(errs, validation.IsValidIPForLegacyField(p.Child("ip"), ing.IP, false, nil)...)
		}
		if ing.Hostname != "" {
			errs = append(errs, dnsSubdomain(ing.Hostname, p.Child("hostname"))...)
		}
	}
	return errs
}

// Endpoints.

func (b *builder) endpoints() *Resource {
	r := &Resource{
		GVK:        v1.SchemeGroupVersion.WithKind("Endpoints"),
		Plural:     "endpoints",
		Singular:   "endpoints",
		ShortNames: []string{"ep"},
		Namespaced: true,
		Verbs:      allVerbs,
		New:        func() runtime.Object { return &v1.Endpoints{} },
		NewList:    func() runtime.Object { return &v1.EndpointsList{} },

		Default:  hook(defaultEndpoints),
		FieldSet: fieldSet[*v1.Endpoints](true, nil),
		Table: table(endpointsColumns, func(e *v1.Endpoints) []interface{} {
			return []interface{}{e.Name, formatEndpoints(e), b.age(e.ObjectMeta)}
		}),
	}
	r.Validate, r.ValidateUpdate = simpleValidation(validateEndpoints)
	return r
}

func defaultEndpoints(e *v1.Endpoints) {
	for i := range e.Subsets {
		for j := range e.Subsets[i].Ports {
			if p := &e.Subsets[i].Ports[j]; p.Protocol == "" {
				p.Protocol = v1.ProtocolTCP
			}
		}
	}
}

func validateEndpoints(e *v1.Endpoints) field.ErrorList {
	errs := validateMeta(&e.ObjectMeta, true, apimachineryvalidation.NameIsDNSSubdomain)
	for i, ss := range e.Subsets {
		p := field.NewPath("subsets").Index(i)
		if len(ss.Addresses) == 0 && len(ss.NotReadyAddresses) == 0 {
			errs = append(errs, field.Required(p, "must specify `addresses` or `notReadyAddresses`"))
		}
		for k, list := range [][]v1.EndpointAddress{ss.Addresses, ss.NotReadyAddresses} {
			name := []string{"addresses", "notReadyAddresses"}[k]
			for j, a := range list {
				errs = append(errs, validation.IsValidIPForLegacyField(p.Child(name).Index(j).Child("ip"), a.IP, false, nil)...)
				if a.Hostname != "" {
					errs = append(errs, dnsLabel(a.Hostname, p.Child(name).Index(j).Child("hostname"))...)
				}
			}
		}
		for j, port := range ss.Ports {
			pp := p.Child("ports").Index(j)
			if len(ss.Ports) > 1 && port.Name == "" {
				errs = append(errs, field.Required(pp.Child("name"), ""))
			} else if port.Name != "" {
				errs = append(errs, dnsLabel(port.Name, pp.Child("name"))...)
			}
			errs = append(errs, portNum(port.Port, pp.Child("port"))...)
			if !slices.Contains(portProtocols, port.Protocol) {
				errs = append(errs, field.NotSupported(pp.Child("protocol"), port.Protocol, portProtocols))
			}
		}
	}
	return errs
}
