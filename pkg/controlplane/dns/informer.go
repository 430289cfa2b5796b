package dns

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
)

// ipIndex indexes services by cluster IP and endpoints by address, for
// PTR answers without a scan of every object.
const ipIndex = "ip"

// InformerServices reads services and namespaces from informer caches.
type InformerServices struct {
	services   corelisters.ServiceLister
	byIP       cache.Indexer
	namespaces corelisters.NamespaceLister
	synced     []cache.InformerSynced
}

// NewInformerServices registers the service and namespace informers (and
// an IP index) with factory; call it before the factory starts.
func NewInformerServices(factory informers.SharedInformerFactory) (*InformerServices, error) {
	svc := factory.Core().V1().Services()
	ns := factory.Core().V1().Namespaces()
	if err := svc.Informer().AddIndexers(cache.Indexers{ipIndex: serviceIPs}); err != nil {
		return nil, fmt.Errorf("service IP index: %w", err)
	}
	return &InformerServices{
		services:   svc.Lister(),
		byIP:       svc.Informer().GetIndexer(),
		namespaces: ns.Lister(),
		synced:     []cache.InformerSynced{svc.Informer().HasSynced, ns.Informer().HasSynced},
	}, nil
}

// Service implements Services.
func (s *InformerServices) Service(namespace, name string) (*v1.Service, bool) {
	svc, err := s.services.Services(namespace).Get(name)
	return svc, err == nil
}

// ServicesByIP implements Services.
func (s *InformerServices) ServicesByIP(ip string) []*v1.Service {
	objs, _ := s.byIP.ByIndex(ipIndex, ip) // the index exists: registered in the constructor
	out := make([]*v1.Service, 0, len(objs))
	for _, o := range objs {
		if svc, ok := o.(*v1.Service); ok {
			out = append(out, svc)
		}
	}
	return out
}

// NamespaceExists implements Services.
func (s *InformerServices) NamespaceExists(name string) bool {
	_, err := s.namespaces.Get(name)
	return err == nil
}

// HasSynced reports whether the caches hold a full list.
func (s *InformerServices) HasSynced() bool { return allSynced(s.synced) }

func serviceIPs(obj interface{}) ([]string, error) {
	svc, ok := obj.(*v1.Service)
	if !ok {
		return nil, nil
	}
	var ips []string
	for _, ip := range clusterIPs(svc) {
		if ip != v1.ClusterIPNone && ip != "" {
			ips = append(ips, ip)
		}
	}
	return ips, nil
}

// InformerEndpoints reads core/v1 Endpoints from an informer cache.
type InformerEndpoints struct {
	lister corelisters.EndpointsLister
	byIP   cache.Indexer
	synced cache.InformerSynced
}

// NewInformerEndpoints registers the Endpoints informer (and an address
// index) with factory; call it before the factory starts.
func NewInformerEndpoints(factory informers.SharedInformerFactory) (*InformerEndpoints, error) {
	// core/v1 Endpoints, deprecated upstream, are what the control plane
	// serves today; an EndpointSlice source can replace this one.
	inf := factory.Core().V1().Endpoints()
	if err := inf.Informer().AddIndexers(cache.Indexers{ipIndex: endpointsIPs}); err != nil {
		return nil, fmt.Errorf("endpoints IP index: %w", err)
	}
	return &InformerEndpoints{lister: inf.Lister(), byIP: inf.Informer().GetIndexer(), synced: inf.Informer().HasSynced}, nil
}

// ServiceEndpoints implements Endpoints.
func (e *InformerEndpoints) ServiceEndpoints(namespace, service string) []Endpoint {
	ep, err := e.lister.Endpoints(namespace).Get(service)
	if err != nil {
		return nil
	}
	return flatten(ep)
}

// EndpointsByIP implements Endpoints.
func (e *InformerEndpoints) EndpointsByIP(ip string) []Endpoint {
	objs, _ := e.byIP.ByIndex(ipIndex, ip) // the index exists: registered in the constructor
	var out []Endpoint
	for _, o := range objs {
		ep, ok := o.(*v1.Endpoints)
		if !ok {
			continue
		}
		for _, a := range flatten(ep) {
			if a.IP == ip {
				out = append(out, a)
			}
		}
	}
	return out
}

// HasSynced reports whether the cache holds a full list.
func (e *InformerEndpoints) HasSynced() bool { return e.synced() }

// flatten turns the subsets of ep into one Endpoint per address.
func flatten(ep *v1.Endpoints) []Endpoint {
	var out []Endpoint
	for _, sub := range ep.Subsets {
		ports := make([]Port, 0, len(sub.Ports))
		for _, p := range sub.Ports {
			ports = append(ports, Port{Name: p.Name, Protocol: p.Protocol, Port: p.Port})
		}
		add := func(addrs []v1.EndpointAddress, ready bool) {
			for _, a := range addrs {
				out = append(out, Endpoint{Namespace: ep.Namespace, Service: ep.Name,
					IP: a.IP, Hostname: a.Hostname, Ready: ready, Ports: ports})
			}
		}
		add(sub.Addresses, true)
		add(sub.NotReadyAddresses, false)
	}
	return out
}

func endpointsIPs(obj interface{}) ([]string, error) {
	ep, ok := obj.(*v1.Endpoints)
	if !ok {
		return nil, nil
	}
	var ips []string
	for _, a := range flatten(ep) {
		ips = append(ips, a.IP)
	}
	return ips, nil
}

func allSynced(fns []cache.InformerSynced) bool {
	for _, f := range fns {
		if !f() {
			return false
		}
	}
	return true
}
