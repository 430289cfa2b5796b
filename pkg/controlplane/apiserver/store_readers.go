package apiserver

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"

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
	list, err := r.s.store("/v1/pods").List(ctx, ns, storage.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list pods in %s: %w", ns, err)
	}
	pods := make([]*v1.Pod, 0, len(list.Items))
	for _, obj := range list.Items {
		pods = append(pods, obj.(*v1.Pod))
	}
	return pods, nil
}

// ListClaims lists the claims of every namespace.
func (r storeReaders) ListClaims(ctx context.Context) ([]*v1.PersistentVolumeClaim, error) {
	list, err := r.s.store("/v1/persistentvolumeclaims").List(ctx, "", storage.ListOptions{})
	if err != nil {
		return nil, err
	}
	claims := make([]*v1.PersistentVolumeClaim, 0, len(list.Items))
	for _, obj := range list.Items {
		claims = append(claims, obj.(*v1.PersistentVolumeClaim))
	}
	return claims, nil
}
