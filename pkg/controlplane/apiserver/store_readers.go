package apiserver

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/nodeagent/nodeagent/pkg/controlplane/apiserver/admission"
	"github.com/nodeagent/nodeagent/pkg/controlplane/storage"
)

// storeReaders adapts the server's stores to the small reader interfaces
// the authorizers (package authz) and admission plugins (package
// admission) declare.
type storeReaders struct{ s *Server }

// GetPod reads one pod from etcd; the store's errors are returned as
// they are (NotFound is told apart by the callers).
func (r storeReaders) GetPod(ctx context.Context, ns, name string) (*v1.Pod, error) {
	obj, err := r.s.store("/v1/pods").Get(ctx, ns, name)
	if err != nil {
		return nil, err
	}
	return obj.(*v1.Pod), nil
}

// ListPods lists a namespace's pods with a consistent read: it also sees
// a pod created a moment ago.
func (r storeReaders) ListPods(ctx context.Context, ns string) ([]*v1.Pod, error) {
	pods, err := listAll[*v1.Pod](ctx, r.s.store("/v1/pods"), ns)
	if err != nil {
		return nil, fmt.Errorf("list pods in %s: %w", ns, err)
	}
	return pods, nil
}

// FindPod reports whether a pod of the namespace matches: from the watch
// cache, and from etcd when the cache has none, so that the node
// authorizer refuses nothing for the cache's lag. The cache answers the
// requests of running pods (every TokenRequest and secret read of a
// node): an etcd list of the namespace for each was the API server's
// largest cost in a burst of pod starts.
func (r storeReaders) FindPod(ctx context.Context, ns string, match func(*v1.Pod) bool) (bool, error) {
	st := r.s.store("/v1/pods")
	filter := func(o runtime.Object) bool { return match(o.(*v1.Pod)) }
	list, err := st.List(ctx, ns, storage.ListOptions{ResourceVersion: "0", Filter: filter})
	if err == nil && len(list.Items) > 0 {
		return true, nil
	}
	if list, err = st.List(ctx, ns, storage.ListOptions{Filter: filter}); err != nil {
		return false, fmt.Errorf("list pods in %s: %w", ns, err)
	}
	return len(list.Items) > 0, nil
}

// ListClaims lists the claims of every namespace.
func (r storeReaders) ListClaims(ctx context.Context) ([]*v1.PersistentVolumeClaim, error) {
	return listAll[*v1.PersistentVolumeClaim](ctx, r.s.store("/v1/persistentvolumeclaims"), "")
}

// GetNode reads one node from etcd; the store's errors as they are.
func (r storeReaders) GetNode(ctx context.Context, name string) (*v1.Node, error) {
	obj, err := r.s.store("/v1/nodes").Get(ctx, "", name)
	if err != nil {
		return nil, err
	}
	return obj.(*v1.Node), nil
}

// GetNamespace reads the watch cache, as upstream's admission plugins read
// their informer: a consistent etcd read on every create would cost more
// than the create. A namespace the cache does not hold yet (created a
// moment ago) is read from etcd.
func (r storeReaders) GetNamespace(ctx context.Context, name string) (*v1.Namespace, error) {
	list, err := r.s.store(nsResource).List(ctx, "", storage.ListOptions{ResourceVersion: "0", Filter: func(o runtime.Object) bool {
		return o.(*v1.Namespace).Name == name
	}})
	if err != nil {
		return nil, err
	}
	if len(list.Items) > 0 {
		return list.Items[0].(*v1.Namespace), nil
	}
	obj, err := r.s.store(nsResource).Get(ctx, "", name)
	if apierrors.IsNotFound(err) {
		return nil, apierrors.NewNotFound(v1.Resource("namespaces"), name)
	}
	if err != nil {
		return nil, err
	}
	return obj.(*v1.Namespace), nil
}

// GetServiceAccount reads a service account from the watch cache, as
// upstream's plugin reads its informer, then from etcd for one created a
// moment ago. A missing "default" is created again: upstream waits for
// its service account controller to do that, and here the server does
// that controller's work (see afterCreate).
func (r storeReaders) GetServiceAccount(ctx context.Context, ns, name string) (*v1.ServiceAccount, error) {
	list, err := r.s.store(saResource).List(ctx, ns, storage.ListOptions{ResourceVersion: "0", Filter: func(o runtime.Object) bool {
		return o.(*v1.ServiceAccount).Name == name
	}})
	if err != nil {
		return nil, fmt.Errorf("list service accounts: %w", err)
	}
	if len(list.Items) > 0 {
		return list.Items[0].(*v1.ServiceAccount), nil
	}
	obj, err := r.s.store(saResource).Get(ctx, ns, name)
	if apierrors.IsNotFound(err) && name == admission.DefaultServiceAccountName {
		r.s.ensureServiceAccount(ctx, ns)
		obj, err = r.s.store(saResource).Get(ctx, ns, name)
	}
	if apierrors.IsNotFound(err) {
		// Upstream's words: the singular resource, no group.
		return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "serviceaccount"}, name)
	}
	if err != nil {
		return nil, err
	}
	return obj.(*v1.ServiceAccount), nil
}

// GetRuntimeClass reads one RuntimeClass from etcd, so that a class
// created a moment ago is seen; the store's NotFound as it is.
func (r storeReaders) GetRuntimeClass(ctx context.Context, name string) (*nodev1.RuntimeClass, error) {
	obj, err := r.s.store("node.k8s.io/v1/runtimeclasses").Get(ctx, "", name)
	if err != nil {
		return nil, err
	}
	return obj.(*nodev1.RuntimeClass), nil
}

// ListStorageClasses lists the storage classes with a consistent read.
func (r storeReaders) ListStorageClasses(ctx context.Context) ([]*storagev1.StorageClass, error) {
	return listAll[*storagev1.StorageClass](ctx, r.s.store("storage.k8s.io/v1/storageclasses"), "")
}

// listAll lists a namespace's objects (every namespace's for "") with a
// consistent read, as their type.
func listAll[T runtime.Object](ctx context.Context, st *storage.Store, ns string) ([]T, error) {
	return listAs[T](ctx, st, ns, storage.ListOptions{})
}

// listAs lists with opts, as their type.
func listAs[T runtime.Object](ctx context.Context, st *storage.Store, ns string, opts storage.ListOptions) ([]T, error) {
	list, err := st.List(ctx, ns, opts)
	if err != nil {
		return nil, err
	}
	out := make([]T, 0, len(list.Items))
	for _, obj := range list.Items {
		out = append(out, obj.(T))
	}
	return out, nil
}
