package garbagecollector

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// kind is one resource the collector watches, as owner and as dependent.
type kind struct {
	apiVersion, kind string
	namespaced       bool
	informer         cache.SharedIndexInformer
	get              func(ctx context.Context, ns, name string) (metav1.Object, error)
	update           func(ctx context.Context, obj metav1.Object) error
	delete           func(ctx context.Context, ns, name string, opts metav1.DeleteOptions) error
}

type typedClient[T any] interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error)
	Update(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error)
	Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error
}

func newKind[T interface {
	runtime.Object
	metav1.Object
}](gv, k string, namespaced bool, inf cache.SharedIndexInformer, client func(ns string) typedClient[T]) *kind {
	return &kind{
		apiVersion: gv, kind: k, namespaced: namespaced, informer: inf,
		get: func(ctx context.Context, ns, name string) (metav1.Object, error) {
			return client(ns).Get(ctx, name, metav1.GetOptions{})
		},
		update: func(ctx context.Context, obj metav1.Object) error {
			_, err := client(obj.GetNamespace()).Update(ctx, obj.(T), metav1.UpdateOptions{})
			return err
		},
		delete: func(ctx context.Context, ns, name string, opts metav1.DeleteOptions) error {
			return client(ns).Delete(ctx, name, opts)
		},
	}
}

// kinds are the types the control plane serves that take part in owner
// references. Events are not among them, as upstream's default
// GCIgnoredResources (events in both groups): they expire by their TTL,
// and watching them would cost the collector as much as every event
// written.
func kinds(cs kubernetes.Interface, f informers.SharedInformerFactory) []*kind {
	core, apps := cs.CoreV1(), cs.AppsV1()
	return []*kind{
		newKind("v1", "Pod", true, f.Core().V1().Pods().Informer(),
			func(ns string) typedClient[*v1.Pod] { return core.Pods(ns) }),
		newKind("v1", "ConfigMap", true, f.Core().V1().ConfigMaps().Informer(),
			func(ns string) typedClient[*v1.ConfigMap] { return core.ConfigMaps(ns) }),
		newKind("v1", "Secret", true, f.Core().V1().Secrets().Informer(),
			func(ns string) typedClient[*v1.Secret] { return core.Secrets(ns) }),
		newKind("v1", "Service", true, f.Core().V1().Services().Informer(),
			func(ns string) typedClient[*v1.Service] { return core.Services(ns) }),
		newKind("v1", "Endpoints", true, f.Core().V1().Endpoints().Informer(), //nolint:staticcheck // served by the control plane
			func(ns string) typedClient[*v1.Endpoints] { return core.Endpoints(ns) }), //nolint:staticcheck
		newKind("discovery.k8s.io/v1", "EndpointSlice", true, f.Discovery().V1().EndpointSlices().Informer(),
			func(ns string) typedClient[*discoveryv1.EndpointSlice] { return cs.DiscoveryV1().EndpointSlices(ns) }),
		newKind("v1", "ServiceAccount", true, f.Core().V1().ServiceAccounts().Informer(),
			func(ns string) typedClient[*v1.ServiceAccount] { return core.ServiceAccounts(ns) }),
		newKind("v1", "Node", false, f.Core().V1().Nodes().Informer(),
			func(string) typedClient[*v1.Node] { return core.Nodes() }),
		newKind("v1", "PersistentVolumeClaim", true, f.Core().V1().PersistentVolumeClaims().Informer(),
			func(ns string) typedClient[*v1.PersistentVolumeClaim] { return core.PersistentVolumeClaims(ns) }),
		newKind("v1", "PersistentVolume", false, f.Core().V1().PersistentVolumes().Informer(),
			func(string) typedClient[*v1.PersistentVolume] { return core.PersistentVolumes() }),
		newKind("apps/v1", "ReplicaSet", true, f.Apps().V1().ReplicaSets().Informer(),
			func(ns string) typedClient[*appsv1.ReplicaSet] { return apps.ReplicaSets(ns) }),
		newKind("apps/v1", "Deployment", true, f.Apps().V1().Deployments().Informer(),
			func(ns string) typedClient[*appsv1.Deployment] { return apps.Deployments(ns) }),
		newKind("coordination.k8s.io/v1", "Lease", true, f.Coordination().V1().Leases().Informer(),
			func(ns string) typedClient[*coordinationv1.Lease] { return cs.CoordinationV1().Leases(ns) }),
	}
}
