package apiserver

import (
	"context"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"

	"github.com/nodeagent/nodeagent/pkg/controlplane/registry"
)

const scResource = "storage.k8s.io/v1/storageclasses"

// setDefaultStorageClass is upstream's DefaultStorageClass admission: a
// claim created without a class (storageClassName unset, not "") gets the
// default one; of several defaults the newest wins, then the first name.
func (s *Server) setDefaultStorageClass(ctx context.Context, pvc *v1.PersistentVolumeClaim) {
	if pvc.Spec.StorageClassName != nil {
		return
	}
	if _, ok := pvc.Annotations[v1.BetaStorageClassAnnotation]; ok {
		return
	}
	if class := s.defaultStorageClass(ctx); class != nil {
		name := class.Name
		pvc.Spec.StorageClassName = &name
	}
}

func (s *Server) defaultStorageClass(ctx context.Context) *storagev1.StorageClass {
	list, err := s.store(scResource).List(ctx, "", storageListAll(nil))
	if err != nil {
		return nil
	}
	var best *storagev1.StorageClass
	for _, obj := range list.Items {
		sc := obj.(*storagev1.StorageClass)
		if !registry.IsDefaultStorageClass(sc.ObjectMeta) {
			continue
		}
		newer := best != nil && sc.CreationTimestamp.After(best.CreationTimestamp.Time)
		tie := best != nil && sc.CreationTimestamp.Equal(&best.CreationTimestamp) && sc.Name < best.Name
		if best == nil || newer || tie {
			best = sc
		}
	}
	return best
}
