package dns

import (
	"fmt"
	"net/netip"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
)

// InformerNodes knows the node addresses from an informer cache, for the
// recursion ACL.
type InformerNodes struct {
	byIP   cache.Indexer
	synced cache.InformerSynced
}

// NewInformerNodes registers the node informer (and an address index)
// with factory; call it before the factory starts.
func NewInformerNodes(factory informers.SharedInformerFactory) (*InformerNodes, error) {
	inf := factory.Core().V1().Nodes().Informer()
	if err := inf.AddIndexers(cache.Indexers{ipIndex: nodeIPs}); err != nil {
		return nil, fmt.Errorf("node address index: %w", err)
	}
	return &InformerNodes{byIP: inf.GetIndexer(), synced: inf.HasSynced}, nil
}

// IsNodeAddress implements Nodes.
func (n *InformerNodes) IsNodeAddress(ip netip.Addr) bool {
	objs, _ := n.byIP.ByIndex(ipIndex, ip.String()) // the index exists: registered in the constructor
	return len(objs) > 0
}

// HasSynced reports whether the cache holds a full list.
func (n *InformerNodes) HasSynced() bool { return n.synced() }

// nodeIPs are a node's IP addresses (host names are not sources).
func nodeIPs(obj interface{}) ([]string, error) {
	node, ok := obj.(*v1.Node)
	if !ok {
		return nil, nil
	}
	var ips []string
	for _, a := range node.Status.Addresses {
		if ip, err := netip.ParseAddr(a.Address); err == nil {
			ips = append(ips, ip.Unmap().String())
		}
	}
	return ips, nil
}
