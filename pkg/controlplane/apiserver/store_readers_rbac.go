package apiserver

import (
	"context"
	"fmt"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/nodeagent/nodeagent/pkg/controlplane/storage"
)

// The RBAC authorizer's reads (authz.RBACReader), from the watch cache as
// upstream's authorizer reads its informers: every request is
// authorized, and an etcd read each time would cost more than most
// requests. A binding or role written a moment ago may be seen a moment
// later, as upstream.

// rbacKey is the served key of an rbac.authorization.k8s.io/v1 resource.
func rbacKey(plural string) string { return resourceKey(rbacv1.GroupName, "v1", plural) }

// GetRole reads one Role from the watch cache.
func (r storeReaders) GetRole(ctx context.Context, ns, name string) (*rbacv1.Role, error) {
	obj, err := r.cached(ctx, "roles", "role", ns, name)
	if err != nil {
		return nil, err
	}
	return obj.(*rbacv1.Role), nil
}

// GetClusterRole reads one ClusterRole from the watch cache.
func (r storeReaders) GetClusterRole(ctx context.Context, name string) (*rbacv1.ClusterRole, error) {
	obj, err := r.cached(ctx, "clusterroles", "clusterrole", "", name)
	if err != nil {
		return nil, err
	}
	return obj.(*rbacv1.ClusterRole), nil
}

// ListRoleBindings lists a namespace's RoleBindings from the watch cache.
func (r storeReaders) ListRoleBindings(ctx context.Context, ns string) ([]*rbacv1.RoleBinding, error) {
	return listCached[*rbacv1.RoleBinding](ctx, r.s.store(rbacKey("rolebindings")), ns)
}

// ListClusterRoleBindings lists the ClusterRoleBindings from the watch cache.
func (r storeReaders) ListClusterRoleBindings(ctx context.Context) ([]*rbacv1.ClusterRoleBinding, error) {
	return listCached[*rbacv1.ClusterRoleBinding](ctx, r.s.store(rbacKey("clusterrolebindings")), "")
}

// cached reads one object from the watch cache; a missing one is
// upstream's lister NotFound, named by the singular resource.
func (r storeReaders) cached(ctx context.Context, plural, singular, ns, name string) (runtime.Object, error) {
	list, err := r.s.store(rbacKey(plural)).List(ctx, ns, storage.ListOptions{ResourceVersion: "0", Filter: func(o runtime.Object) bool {
		m, err := meta.Accessor(o)
		return err == nil && m.GetName() == name
	}})
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", plural, err)
	}
	if len(list.Items) == 0 {
		return nil, apierrors.NewNotFound(rbacv1.Resource(singular), name)
	}
	return list.Items[0], nil
}

// listCached lists a namespace's objects ("": all) from the watch cache.
func listCached[T runtime.Object](ctx context.Context, st *storage.Store, ns string) ([]T, error) {
	return listAs[T](ctx, st, ns, storage.ListOptions{ResourceVersion: "0"})
}
