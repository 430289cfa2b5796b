package dns

import v1 "k8s.io/api/core/v1"

// Services is what the server reads about services and namespaces.
type Services interface {
	// Service returns the service ns/name, if it exists.
	Service(namespace, name string) (*v1.Service, bool)
	// ServicesByIP returns the services that have ip as a cluster IP.
	ServicesByIP(ip string) []*v1.Service
	// NamespaceExists reports whether the namespace exists: names in a
	// missing namespace are NXDOMAIN, as in CoreDNS.
	NamespaceExists(name string) bool
}

// Endpoints is what the server reads about the addresses behind services.
// It is an interface so that core/v1 Endpoints (today) and discovery/v1
// EndpointSlices (once served) are interchangeable sources.
type Endpoints interface {
	// ServiceEndpoints returns the endpoints of the service ns/name.
	ServiceEndpoints(namespace, service string) []Endpoint
	// EndpointsByIP returns the endpoints, of any service, with address ip.
	EndpointsByIP(ip string) []Endpoint
}

// Endpoint is one address of a service.
type Endpoint struct {
	Namespace, Service string
	IP                 string
	// Hostname is the endpoint's hostname field (a StatefulSet pod's
	// name under its governing service); empty when unset.
	Hostname string
	// Ready is false for addresses that are not ready to serve; they are
	// published only when the service asks for it.
	Ready bool
	Ports []Port
}

// Port is a port of an endpoint.
type Port struct {
	Name     string
	Protocol v1.Protocol
	Port     int32
}
