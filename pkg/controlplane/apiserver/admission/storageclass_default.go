package admission

import (
	"context"

	admissionv1 "k8s.io/api/admission/v1"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"

	"github.com/nodeagent/nodeagent/pkg/controlplane/registry"
)

// DefaultStorageClass is upstream's plugin of that name: a claim created
// without a class (storageClassName unset, not "") gets the default one;
// of several defaults the newest wins, then the first name.
type DefaultStorageClass struct {
	StorageClasses StorageClassLister
}

var _ MutationInterface = (*DefaultStorageClass)(nil)

// Name is the plugin's upstream name.
func (*DefaultStorageClass) Name() string { return DefaultStorageClassName }

// Handles: creates.
func (*DefaultStorageClass) Handles(op admissionv1.Operation) bool { return op == admissionv1.Create }

// Admit sets the default class of a created claim without one.
func (p *DefaultStorageClass) Admit(ctx context.Context, a *Attributes) error {
	pvc, ok := a.Object.(*v1.PersistentVolumeClaim)
	if !ok || pvc.Spec.StorageClassName != nil {
		return nil
	}
	if _, ok := pvc.Annotations[v1.BetaStorageClassAnnotation]; ok {
		return nil
	}
	if class := p.defaultStorageClass(ctx); class != nil {
		name := class.Name
		pvc.Spec.StorageClassName = &name
	}
	return nil
}

// defaultStorageClass is the default class, nil without one (or when
// the classes cannot be listed).
func (p *DefaultStorageClass) defaultStorageClass(ctx context.Context) *storagev1.StorageClass {
	classes, err := p.StorageClasses.ListStorageClasses(ctx)
	if err != nil {
		return nil
	}
	var best *storagev1.StorageClass
	for _, sc := range classes {
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
