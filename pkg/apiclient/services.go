package apiclient

import (
	"context"
	"errors"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
)

// ServiceWatch keeps every namespace's services from a watch, as the
// kubelet's service informer does (the node authorizer lets a node list
// and watch services): podworker.Config.Services, the source of the
// containers' service environment variables.
type ServiceWatch struct {
	factory informers.SharedInformerFactory
	lister  corelisters.ServiceLister
	synced  func() bool
}

// NewServiceWatch builds the informer; Run starts it.
func NewServiceWatch(client kubernetes.Interface) (*ServiceWatch, error) {
	if client == nil {
		return nil, errors.New("apiclient: service watch needs Client")
	}
	f := informers.NewSharedInformerFactory(client, 0)
	services := f.Core().V1().Services()
	inf := services.Informer() // registered before Start, so that the factory runs it
	return &ServiceWatch{factory: f, lister: services.Lister(), synced: inf.HasSynced}, nil
}

// Run runs the informer until ctx ends.
func (w *ServiceWatch) Run(ctx context.Context) error {
	w.factory.Start(ctx.Done())
	<-ctx.Done()
	w.factory.Shutdown()
	return nil
}

// ListServices is every service the watch has seen (shared: read only).
func (w *ServiceWatch) ListServices() ([]*v1.Service, error) {
	return w.lister.List(labels.Everything())
}

// HasSynced reports whether the services have been listed once.
func (w *ServiceWatch) HasSynced() bool { return w.synced() }
