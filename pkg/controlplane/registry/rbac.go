package registry

import (
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/validation/path"
	"k8s.io/apimachinery/pkg/runtime"
)

// The RBAC API (rbac.authorization.k8s.io/v1), as upstream's
// pkg/registry/rbac/{role,clusterrole,rolebinding,clusterrolebinding} and
// pkg/apis/rbac/validation. No short names and no categories, as
// upstream. Escalation prevention (upstream's policybased storage) needs
// the requester's rights: the API server runs it (authz.Escalation)
// after these hooks' validation.

func (b *builder) roles() *Resource {
	validate, validateUpdate := simpleValidation(validateRole)
	return &Resource{
		GVK:        rbacv1.SchemeGroupVersion.WithKind("Role"),
		Plural:     "roles",
		Singular:   "role",
		Namespaced: true,
		Verbs:      allVerbs,
		New:        func() runtime.Object { return &rbacv1.Role{} },
		NewList:    func() runtime.Object { return &rbacv1.RoleList{} },

		Validate:       validate,
		ValidateUpdate: validateUpdate,
		FieldSet:       fieldSet[*rbacv1.Role](true, nil),
		Table:          table(roleColumns, func(r *rbacv1.Role) []interface{} { return roleRow(r.Name, r.ObjectMeta) }),
	}
}

func (b *builder) clusterRoles() *Resource {
	validate, validateUpdate := simpleValidation(validateClusterRole)
	return &Resource{
		GVK:      rbacv1.SchemeGroupVersion.WithKind("ClusterRole"),
		Plural:   "clusterroles",
		Singular: "clusterrole",
		Verbs:    allVerbs,
		New:      func() runtime.Object { return &rbacv1.ClusterRole{} },
		NewList:  func() runtime.Object { return &rbacv1.ClusterRoleList{} },

		Validate:       validate,
		ValidateUpdate: validateUpdate,
		FieldSet:       fieldSet[*rbacv1.ClusterRole](false, nil),
		Table:          table(roleColumns, func(r *rbacv1.ClusterRole) []interface{} { return roleRow(r.Name, r.ObjectMeta) }),
	}
}

func (b *builder) roleBindings() *Resource {
	return &Resource{
		GVK:        rbacv1.SchemeGroupVersion.WithKind("RoleBinding"),
		Plural:     "rolebindings",
		Singular:   "rolebinding",
		Namespaced: true,
		Verbs:      allVerbs,
		New:        func() runtime.Object { return &rbacv1.RoleBinding{} },
		NewList:    func() runtime.Object { return &rbacv1.RoleBindingList{} },

		Default:        hook(func(rb *rbacv1.RoleBinding) { defaultBinding(&rb.RoleRef, rb.Subjects) }),
		Validate:       check(validateRoleBinding),
		ValidateUpdate: check2(validateRoleBindingUpdate),
		FieldSet:       fieldSet[*rbacv1.RoleBinding](true, nil),
		Table: table(bindingColumns, func(rb *rbacv1.RoleBinding) []interface{} {
			return b.bindingRow(rb.ObjectMeta, rb.RoleRef, rb.Subjects)
		}),
	}
}

func (b *builder) clusterRoleBindings() *Resource {
	return &Resource{
		GVK:      rbacv1.SchemeGroupVersion.WithKind("ClusterRoleBinding"),
		Plural:   "clusterrolebindings",
		Singular: "clusterrolebinding",
		Verbs:    allVerbs,
		New:      func() runtime.Object { return &rbacv1.ClusterRoleBinding{} },
		NewList:  func() runtime.Object { return &rbacv1.ClusterRoleBindingList{} },

		Default:        hook(func(rb *rbacv1.ClusterRoleBinding) { defaultBinding(&rb.RoleRef, rb.Subjects) }),
		Validate:       check(validateClusterRoleBinding),
		ValidateUpdate: check2(validateClusterRoleBindingUpdate),
		FieldSet:       fieldSet[*rbacv1.ClusterRoleBinding](false, nil),
		Table: table(bindingColumns, func(rb *rbacv1.ClusterRoleBinding) []interface{} {
			return b.bindingRow(rb.ObjectMeta, rb.RoleRef, rb.Subjects)
		}),
	}
}

// defaultBinding is upstream's v1 defaulting: the roleRef's group and
// the User and Group subjects' group are rbac.authorization.k8s.io when
// unset; ServiceAccount subjects stay in the core group.
func defaultBinding(ref *rbacv1.RoleRef, subjects []rbacv1.Subject) {
	if ref.APIGroup == "" {
		ref.APIGroup = rbacv1.GroupName
	}
	for i := range subjects {
		s := &subjects[i]
		if s.APIGroup == "" && (s.Kind == rbacv1.UserKind || s.Kind == rbacv1.GroupKind) {
			s.APIGroup = rbacv1.GroupName
		}
	}
}

// validateRBACName is upstream's ValidateRBACName: any path segment.
func validateRBACName(name string, _ bool) []string { return path.IsValidPathSegmentName(name) }
