package rbacpolicy

import (
	rbacv1 "k8s.io/api/rbac/v1"
)

// The namespaces the policy writes into, and the well-known users and
// groups it binds (k8s.io/apiserver/pkg/authentication/user,
// .../serviceaccount).
const (
	kubeSystem = "kube-system"
	kubePublic = "kube-public"

	mastersGroup          = "system:masters"
	monitoringGroup       = "system:monitoring"
	authenticatedGroup    = "system:authenticated"
	unauthenticatedGroup  = "system:unauthenticated"
	serviceAccountsGroup  = "system:serviceaccounts"
	kubeProxyUser         = "system:kube-proxy"
	kubeControllerManager = "system:kube-controller-manager"
	kubeSchedulerUser     = "system:kube-scheduler"
)

// clusterRoleBindings are upstream's ClusterRoleBindings() (policy.go).
func clusterRoleBindings() []rbacv1.ClusterRoleBinding {
	return []rbacv1.ClusterRoleBinding{
		clusterBinding(ClusterAdmin, group(mastersGroup)),
		clusterBinding("system:monitoring", group(monitoringGroup)),
		clusterBinding("system:discovery", group(authenticatedGroup)),
		clusterBinding("system:basic-user", group(authenticatedGroup)),
		clusterBinding("system:public-info-viewer", group(authenticatedGroup), group(unauthenticatedGroup)),
		clusterBinding("system:node-proxier", user(kubeProxyUser)),
		clusterBinding("system:kube-controller-manager", user(kubeControllerManager)),
		clusterBinding("system:kube-dns", serviceAccount(kubeSystem, "kube-dns")),
		clusterBinding(SystemKubeScheduler, user(kubeSchedulerUser)),
		clusterBinding("system:volume-scheduler", user(kubeSchedulerUser)),
		// Deprecated since the node authorizer (1.7): the binding stays,
		// without subjects, so that a tightening reconciliation can drop
		// system:nodes from clusters that had it.
		clusterBinding(SystemNode),
		// every workload may read the service account issuer's OIDC
		// discovery documents
		clusterBinding("system:service-account-issuer-discovery", group(serviceAccountsGroup)),
		// service accounts read ClusterTrustBundles
		clusterBinding("system:cluster-trust-bundle-discovery", group(serviceAccountsGroup)),
	}
}

// role is a bootstrap Role in namespace.
func role(namespace, name string, rs ...*ruleBuilder) rbacv1.Role {
	meta := defaultMeta(name)
	meta.Namespace = namespace
	return rbacv1.Role{ObjectMeta: meta, Rules: rules(rs...)}
}

// leaderLocking is the role of a component's leader election in
// kube-system.
func leaderLocking(component string) rbacv1.Role {
	return role(kubeSystem, "system::leader-locking-"+component,
		newRule("watch", "get", "list", "create", "update").groups(coordinationGroup).resources("leases"),
		newRule("watch", "get", "list", "create", "update").groups(coordinationGroup).resources("leasecandidates"))
}

// namespaceRoles are upstream's NamespaceRoles() (namespace_policy.go).
func namespaceRoles() []rbacv1.Role {
	return []rbacv1.Role{
		// the front proxy and client CA of extension API servers
		role(kubeSystem, "extension-apiserver-authentication-reader",
			newRule("get", "list", "watch").groups(legacyGroup).resources("configmaps").names("extension-apiserver-authentication")),
		leaderLocking("kube-controller-manager"),
		leaderLocking("kube-scheduler"),
		role(kubeSystem, ControllerRolePrefix+"bootstrap-signer",
			newRule("get", "list", "watch").groups(legacyGroup).resources("secrets")),
		role(kubeSystem, ControllerRolePrefix+"cloud-provider",
			newRule("create", "get", "list", "watch").groups(legacyGroup).resources("configmaps")),
		role(kubeSystem, ControllerRolePrefix+"token-cleaner",
			newRule("delete", "get", "list", "watch").groups(legacyGroup).resources("secrets"),
			eventsRule()),
		// the bootstrap signer signs the cluster-info map of kube-public
		role(kubePublic, ControllerRolePrefix+"bootstrap-signer",
			newRule("get", "list", "watch").groups(legacyGroup).resources("configmaps"),
			newRule("update").groups(legacyGroup).resources("configmaps").names("cluster-info"),
			eventsRule()),
	}
}

// roleBinding binds the Role role in namespace.
func roleBinding(namespace, name, role string, subjects ...rbacv1.Subject) rbacv1.RoleBinding {
	meta := defaultMeta(name)
	meta.Namespace = namespace
	return rbacv1.RoleBinding{
		ObjectMeta: meta,
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role},
		Subjects:   subjects,
	}
}

// namespaceRoleBindings are upstream's NamespaceRoleBindings().
func namespaceRoleBindings() []rbacv1.RoleBinding {
	return []rbacv1.RoleBinding{
		roleBinding(kubeSystem, "system::extension-apiserver-authentication-reader", "extension-apiserver-authentication-reader",
			user(kubeControllerManager), user(kubeSchedulerUser)),
		roleBinding(kubeSystem, "system::leader-locking-kube-controller-manager", "system::leader-locking-kube-controller-manager",
			user(kubeControllerManager),
			serviceAccount(kubeSystem, "kube-controller-manager"),
			serviceAccount(kubeSystem, "leader-election-controller")),
		roleBinding(kubeSystem, "system::leader-locking-kube-scheduler", "system::leader-locking-kube-scheduler",
			user(kubeSchedulerUser), serviceAccount(kubeSystem, "kube-scheduler")),
		roleBinding(kubeSystem, ControllerRolePrefix+"bootstrap-signer", ControllerRolePrefix+"bootstrap-signer",
			serviceAccount(kubeSystem, "bootstrap-signer")),
		roleBinding(kubeSystem, ControllerRolePrefix+"cloud-provider", ControllerRolePrefix+"cloud-provider",
			serviceAccount(kubeSystem, "cloud-provider")),
		roleBinding(kubeSystem, ControllerRolePrefix+"token-cleaner", ControllerRolePrefix+"token-cleaner",
			serviceAccount(kubeSystem, "token-cleaner")),
		roleBinding(kubePublic, ControllerRolePrefix+"bootstrap-signer", ControllerRolePrefix+"bootstrap-signer",
			serviceAccount(kubeSystem, "bootstrap-signer")),
	}
}
