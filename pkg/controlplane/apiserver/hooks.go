package apiserver

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/nodeagent/nodeagent/pkg/controlplane/registry"
)

// hookStorage is the server as the registry's create and delete hooks see
// it (registry.Storage).
type hookStorage struct{ s *Server }

func (s *Server) hookStorage() registry.Storage { return hookStorage{s} }

func (h hookStorage) List(ctx context.Context, res *registry.Resource, namespace string) ([]runtime.Object, error) {
	list, err := h.s.stores[res].List(ctx, namespace, storageListAll(nil))
	if err != nil {
		return nil, err
	}
	return list.Items, nil
}

func (h hookStorage) CreateInternal(ctx context.Context, res *registry.Resource, obj runtime.Object) {
	h.s.createInternal(ctx, res, obj)
}

func (h hookStorage) PurgeNamespace(name string) { h.s.purgeNamespaceLater(name) }
