package admission

import (
	"context"

	v1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	storagev1 "k8s.io/api/storage/v1"
)

// What the plugins read, declared by their consumer; the core's storage
// adapters satisfy them.

// NamespaceGetter reads one namespace (NamespaceLifecycle, PodSecurity):
// a NotFound error for a missing one.
type NamespaceGetter interface {
	GetNamespace(ctx context.Context, name string) (*v1.Namespace, error)
}

// ServiceAccountGetter reads a pod's service account (ServiceAccount).
type ServiceAccountGetter interface {
	GetServiceAccount(ctx context.Context, namespace, name string) (*v1.ServiceAccount, error)
}

// PodGetter reads one pod (NodeRestriction); the store's errors as they are.
type PodGetter interface {
	GetPod(ctx context.Context, namespace, name string) (*v1.Pod, error)
}

// NodeGetter reads one node (NodeRestriction); the store's errors as they are.
type NodeGetter interface {
	GetNode(ctx context.Context, name string) (*v1.Node, error)
}

// PodLister lists a namespace's pods (PodSecurity, when a namespace's
// enforce label is tightened).
type PodLister interface {
	ListPods(ctx context.Context, namespace string) ([]*v1.Pod, error)
}

// StorageClassLister lists the storage classes (DefaultStorageClass).
type StorageClassLister interface {
	ListStorageClasses(ctx context.Context) ([]*storagev1.StorageClass, error)
}

// RuntimeClassGetter reads one RuntimeClass (RuntimeClass): a NotFound
// error for a missing one.
type RuntimeClassGetter interface {
	GetRuntimeClass(ctx context.Context, name string) (*nodev1.RuntimeClass, error)
}

// Dependencies are what New's plugins need.
type Dependencies struct {
	Namespaces      NamespaceGetter
	ServiceAccounts ServiceAccountGetter
	Pods            PodGetter
	Nodes           NodeGetter
	PodLister       PodLister
	StorageClasses  StorageClassLister
	RuntimeClasses  RuntimeClassGetter
	// NameSuffix draws the random part of generated names (the token
	// volume's kube-api-access-<5 chars>).
	NameSuffix func() string
}

// The plugins' upstream names, in kube-apiserver's order
// (AllOrderedPlugins in k8s.io/kubernetes pkg/kubeapiserver/options).
const (
	NamespaceLifecycleName       = "NamespaceLifecycle"
	ServiceAccountName           = "ServiceAccount"
	NodeRestrictionName          = "NodeRestriction"
	PodSecurityName              = "PodSecurity"
	DefaultTolerationSecondsName = "DefaultTolerationSeconds"
	DefaultStorageClassName      = "DefaultStorageClass"
	RuntimeClassName             = "RuntimeClass"
)

// New builds the server's admission chain: the one ordered list of
// plugins. A new plugin goes where upstream's order puts it; the
// webhook and policy plugins go at the end.
func New(d Dependencies) (*Chain, error) {
	podSecurity, err := NewPodSecurity(d.Namespaces, d.PodLister)
	if err != nil {
		return nil, err
	}
	return NewChain(
		&NamespaceLifecycle{Namespaces: d.Namespaces},
		&ServiceAccount{ServiceAccounts: d.ServiceAccounts, NameSuffix: d.NameSuffix},
		&NodeRestriction{Pods: d.Pods, Nodes: d.Nodes},
		podSecurity,
		&DefaultTolerationSeconds{},
		&DefaultStorageClass{StorageClasses: d.StorageClasses},
		&RuntimeClass{RuntimeClasses: d.RuntimeClasses},
	), nil
}
