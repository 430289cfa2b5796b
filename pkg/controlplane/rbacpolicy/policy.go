package rbacpolicy

import (
	rbacv1 "k8s.io/api/rbac/v1"
)

// Policy is a set of RBAC objects to keep in the cluster.
type Policy struct {
	// ClusterRoles are the roles of people and components, then the
	// controller roles (upstream's ClusterRoles() + ControllerRoles()).
	ClusterRoles        []rbacv1.ClusterRole
	ClusterRoleBindings []rbacv1.ClusterRoleBinding
	// Roles and RoleBindings carry their namespace.
	Roles        []rbacv1.Role
	RoleBindings []rbacv1.RoleBinding
}

// Default is upstream v1.37's bootstrap policy. Every call builds new
// objects, so callers may keep or change them.
func Default() Policy {
	controllers := controllerRoles()
	return Policy{
		ClusterRoles:        append(clusterRoles(), controllers...),
		ClusterRoleBindings: append(clusterRoleBindings(), controllerRoleBindings(controllers)...),
		Roles:               namespaceRoles(),
		RoleBindings:        namespaceRoleBindings(),
	}
}
