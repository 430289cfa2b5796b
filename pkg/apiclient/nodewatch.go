package apiclient

import (
	"context"
	"errors"
	"fmt"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
)

// NodeWatch keeps the node's own Node object current from a watch
// (metadata.name=<node>, which the node authorizer allows a kubelet), as
// the kubelet's node lister does: admission reads the labels and taints
// set through the API from it.
type NodeWatch struct {
	client  kubernetes.Interface
	name    string
	factory informers.SharedInformerFactory
	lister  corelisters.NodeLister
}

// NewNodeWatch builds the informer; Run starts it.
func NewNodeWatch(client kubernetes.Interface, nodeName string) (*NodeWatch, error) {
	if client == nil || nodeName == "" {
		return nil, errors.New("apiclient: node watch needs Client and NodeName")
	}
	sel := fields.OneTermEqualSelector("metadata.name", nodeName).String()
	f := informers.NewSharedInformerFactoryWithOptions(client, 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.FieldSelector = sel }))
	nodes := f.Core().V1().Nodes()
	nodes.Informer() // registered before Start, so that the factory runs it
	return &NodeWatch{client: client, name: nodeName, factory: f, lister: nodes.Lister()}, nil
}

// Run runs the informer until ctx ends.
func (w *NodeWatch) Run(ctx context.Context) error {
	w.factory.Start(ctx.Done())
	<-ctx.Done()
	w.factory.Shutdown()
	return nil
}

// Node is podworker.Config.Node: the watched Node (shared: read only), or
// the API server's when fresh is set or the watch has not seen it yet
// (just registered, or the informer still listing).
func (w *NodeWatch) Node(ctx context.Context, fresh bool) (*v1.Node, error) {
	if !fresh {
		if n, err := w.lister.Get(w.name); err == nil {
			return n, nil
		}
	}
	n, err := w.client.CoreV1().Nodes().Get(ctx, w.name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("get node %s: %w", w.name, err)
	}
	return n, nil
}
