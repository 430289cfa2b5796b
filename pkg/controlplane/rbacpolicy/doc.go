// Package rbacpolicy is kube-apiserver's bootstrap RBAC policy
// (plugin/pkg/auth/authorizer/rbac/bootstrappolicy) and the start-up
// reconciliation that keeps it in the cluster (the rbac/bootstrap-roles
// post-start hook of pkg/registry/rbac/rest/storage_rbac.go).
//
// The policy is data: Default returns upstream v1.37's ClusterRoles
// (cluster-admin, admin/edit/view aggregated from system:aggregate-to-*,
// system:node, system:kube-scheduler, the system:controller:* roles of the
// controller manager, ...), their ClusterRoleBindings, and the Roles and
// RoleBindings of kube-system and kube-public, with the feature gates at
// their v1.37 defaults. Every object carries the label
// kubernetes.io/bootstrapping=rbac-defaults and the annotation
// rbac.authorization.kubernetes.io/autoupdate=true. Rules may name
// resources nodeagent does not serve: roles may name anything, and
// upstream's do.
//
// Reconcile runs on every start, as upstream's hook: what is missing is
// created; an object that still says autoupdate=true gets back the rules,
// aggregation selectors, subjects, labels and annotations it lacks (extra
// ones a user added stay); a binding whose roleRef changed is recreated;
// an object a user annotated autoupdate=false is left as it is (a warning
// names what it lacks). It retries until the API answers and every object
// reconciled, or ctx ends.
//
// Use it once the API server serves:
//
//	if err := rbacpolicy.Reconcile(ctx, client, log); err != nil { ... }
package rbacpolicy
