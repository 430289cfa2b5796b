package apiclient

import (
	"context"
	"errors"

	nodev1 "k8s.io/api/node/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	nodelisters "k8s.io/client-go/listers/node/v1"
)

// RuntimeClassWatch keeps the RuntimeClasses from a watch, as the
// kubelet's runtime class manager does (the node authorizer lets a node
// get, list and watch them): podworker.Config.RuntimeClasses, which
// resolves a pod's runtimeClassName to its sandbox's CRI handler.
type RuntimeClassWatch struct {
	client  kubernetes.Interface
	factory informers.SharedInformerFactory
	lister  nodelisters.RuntimeClassLister
}

// NewRuntimeClassWatch builds the informer; Run starts it.
func NewRuntimeClassWatch(client kubernetes.Interface) (*RuntimeClassWatch, error) {
	if client == nil {
		return nil, errors.New("apiclient: runtime class watch needs Client")
	}
	f := informers.NewSharedInformerFactory(client, 0)
	classes := f.Node().V1().RuntimeClasses()
	classes.Informer() // registered before Start, so that the factory runs it
	return &RuntimeClassWatch{client: client, factory: f, lister: classes.Lister()}, nil
}

// Run runs the informer until ctx ends.
func (w *RuntimeClassWatch) Run(ctx context.Context) error {
	w.factory.Start(ctx.Done())
	<-ctx.Done()
	w.factory.Shutdown()
	return nil
}

// GetRuntimeClass is the class from the watch's cache. A class the cache
// does not hold (yet: created a moment before its pod, or the watch not
// synced) is read from the API server, so that a pod does not fail for
// the watch's delay; a missing class is the lister's NotFound, whose
// message the kubelet's events quote.
func (w *RuntimeClassWatch) GetRuntimeClass(name string) (*nodev1.RuntimeClass, error) {
	rc, err := w.lister.Get(name)
	if !apierrors.IsNotFound(err) {
		return rc, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), objectTimeout)
	defer cancel()
	live, liveErr := w.client.NodeV1().RuntimeClasses().Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(liveErr) {
		return nil, err
	}
	return live, liveErr
}
