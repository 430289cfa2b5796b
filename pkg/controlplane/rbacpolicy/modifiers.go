package rbacpolicy

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/component-helpers/auth/rbac/reconciliation"
)

// callTimeout bounds each API call of the reconciliation.
const callTimeout = 10 * time.Second

// The reconciliation package's modifiers over client-go, with a context
// and a timeout per call: the library's own adapters call the API with
// context.TODO().

// typedClient is what the four RBAC clients of client-go have in common.
type typedClient[T any] interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error)
	Create(ctx context.Context, obj T, opts metav1.CreateOptions) (T, error)
	Update(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error)
	Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error
}

// access calls one kind's client.
type access[T any] struct {
	ctx    context.Context
	kube   kubernetes.Interface
	client func(namespace string) typedClient[T]
	// namespaced kinds make their namespace exist before a create, as
	// upstream's adapters do.
	namespaced bool
}

func (a access[T]) get(namespace, name string) (T, error) {
	ctx, cancel := context.WithTimeout(a.ctx, callTimeout)
	defer cancel()
	return a.client(namespace).Get(ctx, name, metav1.GetOptions{})
}

func (a access[T]) create(namespace string, obj T) (T, error) {
	if a.namespaced {
		if err := ensureNamespace(a.ctx, a.kube, namespace); err != nil {
			var zero T
			return zero, err
		}
	}
	ctx, cancel := context.WithTimeout(a.ctx, callTimeout)
	defer cancel()
	return a.client(namespace).Create(ctx, obj, metav1.CreateOptions{})
}

func (a access[T]) update(namespace string, obj T) (T, error) {
	ctx, cancel := context.WithTimeout(a.ctx, callTimeout)
	defer cancel()
	return a.client(namespace).Update(ctx, obj, metav1.UpdateOptions{})
}

// delete removes the object only if it is still the one read (its UID):
// one recreated meanwhile is not ours to delete.
func (a access[T]) delete(namespace, name string, uid types.UID) error {
	ctx, cancel := context.WithTimeout(a.ctx, callTimeout)
	defer cancel()
	return a.client(namespace).Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
}

// wrapped turns a client's answer into the reconciliation's adapter.
func wrapped[T, A any](wrap func(T) A) func(T, error) (A, error) {
	return func(obj T, err error) (A, error) {
		if err != nil {
			var zero A
			return zero, err
		}
		return wrap(obj), nil
	}
}

// ruleOwners is a reconciliation.RuleOwnerModifier (roles).
type ruleOwners[T any] struct {
	access[T]
	wrap   func(T) reconciliation.RuleOwner
	unwrap func(reconciliation.RuleOwner) T
}

func (m ruleOwners[T]) Get(namespace, name string) (reconciliation.RuleOwner, error) {
	return wrapped(m.wrap)(m.get(namespace, name))
}

func (m ruleOwners[T]) Create(in reconciliation.RuleOwner) (reconciliation.RuleOwner, error) {
	return wrapped(m.wrap)(m.create(in.GetNamespace(), m.unwrap(in)))
}

func (m ruleOwners[T]) Update(in reconciliation.RuleOwner) (reconciliation.RuleOwner, error) {
	return wrapped(m.wrap)(m.update(in.GetNamespace(), m.unwrap(in)))
}

// bindings is a reconciliation.RoleBindingModifier.
type bindings[T any] struct {
	access[T]
	wrap   func(T) reconciliation.RoleBinding
	unwrap func(reconciliation.RoleBinding) T
}

func (m bindings[T]) Get(namespace, name string) (reconciliation.RoleBinding, error) {
	return wrapped(m.wrap)(m.get(namespace, name))
}

func (m bindings[T]) Create(in reconciliation.RoleBinding) (reconciliation.RoleBinding, error) {
	return wrapped(m.wrap)(m.create(in.GetNamespace(), m.unwrap(in)))
}

func (m bindings[T]) Update(in reconciliation.RoleBinding) (reconciliation.RoleBinding, error) {
	return wrapped(m.wrap)(m.update(in.GetNamespace(), m.unwrap(in)))
}

func (m bindings[T]) Delete(namespace, name string, uid types.UID) error {
	return m.delete(namespace, name, uid)
}

func clusterRoleModifier(ctx context.Context, kube kubernetes.Interface) reconciliation.RuleOwnerModifier {
	return ruleOwners[*rbacv1.ClusterRole]{
		access: access[*rbacv1.ClusterRole]{ctx: ctx, kube: kube,
			client: func(string) typedClient[*rbacv1.ClusterRole] { return kube.RbacV1().ClusterRoles() }},
		wrap: func(r *rbacv1.ClusterRole) reconciliation.RuleOwner {
			return reconciliation.ClusterRoleRuleOwner{ClusterRole: r}
		},
		unwrap: func(o reconciliation.RuleOwner) *rbacv1.ClusterRole {
			return o.(reconciliation.ClusterRoleRuleOwner).ClusterRole
		},
	}
}

func roleModifier(ctx context.Context, kube kubernetes.Interface) reconciliation.RuleOwnerModifier {
	return ruleOwners[*rbacv1.Role]{
		access: access[*rbacv1.Role]{ctx: ctx, kube: kube, namespaced: true,
			client: func(ns string) typedClient[*rbacv1.Role] { return kube.RbacV1().Roles(ns) }},
		wrap:   func(r *rbacv1.Role) reconciliation.RuleOwner { return reconciliation.RoleRuleOwner{Role: r} },
		unwrap: func(o reconciliation.RuleOwner) *rbacv1.Role { return o.(reconciliation.RoleRuleOwner).Role },
	}
}

func clusterRoleBindingModifier(ctx context.Context, kube kubernetes.Interface) reconciliation.RoleBindingModifier {
	return bindings[*rbacv1.ClusterRoleBinding]{
		access: access[*rbacv1.ClusterRoleBinding]{ctx: ctx, kube: kube,
			client: func(string) typedClient[*rbacv1.ClusterRoleBinding] { return kube.RbacV1().ClusterRoleBindings() }},
		wrap: func(b *rbacv1.ClusterRoleBinding) reconciliation.RoleBinding {
			return reconciliation.ClusterRoleBindingAdapter{ClusterRoleBinding: b}
		},
		unwrap: func(b reconciliation.RoleBinding) *rbacv1.ClusterRoleBinding {
			return b.(reconciliation.ClusterRoleBindingAdapter).ClusterRoleBinding
		},
	}
}

func roleBindingModifier(ctx context.Context, kube kubernetes.Interface) reconciliation.RoleBindingModifier {
	return bindings[*rbacv1.RoleBinding]{
		access: access[*rbacv1.RoleBinding]{ctx: ctx, kube: kube, namespaced: true,
			client: func(ns string) typedClient[*rbacv1.RoleBinding] { return kube.RbacV1().RoleBindings(ns) }},
		wrap: func(b *rbacv1.RoleBinding) reconciliation.RoleBinding {
			return reconciliation.RoleBindingAdapter{RoleBinding: b}
		},
		unwrap: func(b reconciliation.RoleBinding) *rbacv1.RoleBinding {
			return b.(reconciliation.RoleBindingAdapter).RoleBinding
		},
	}
}

// ensureNamespace makes the namespace of a Role or RoleBinding exist, as
// upstream's adapters: best effort, a reconciler that may not read or
// create namespaces still writes into existing ones.
func ensureNamespace(ctx context.Context, client kubernetes.Interface, name string) error {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	_, err := client.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
	switch {
	case err == nil:
		return nil
	case !apierrors.IsNotFound(err) && !apierrors.IsForbidden(err):
		return err
	}
	_, err = client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err == nil || apierrors.IsAlreadyExists(err) || apierrors.IsForbidden(err) {
		return nil
	}
	return err
}
