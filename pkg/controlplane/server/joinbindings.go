package server

import (
	"context"
	"fmt"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// NodeBootstrapGroup is the group of the join tokens `nodeagent server
// token create` makes (their auth-extra-groups), as kubeadm's
// system:bootstrappers:kubeadm:default-node-token.
const NodeBootstrapGroup = "system:bootstrappers:nodeagent:default-node-token"

// joinBindings are the ClusterRoleBindings `kubeadm init` creates for
// joining nodes (its bootstrap-token phase), under nodeagent's prefix:
// the join tokens' group may create certificate signing requests
// (system:node-bootstrapper) and have a node client certificate approved
// (nodeclient); nodes may have their own client certificate renewed
// (selfnodeclient). The bootstrap RBAC policy has the roles, not these
// bindings (as upstream's). And where kubeadm binds system:node-proxier
// to kube-proxy's service account, nodeagent binds it to the nodes: the
// agent's service proxy (kube-proxy's job) and kubenet's routes read
// every Node, Service and EndpointSlice with the node's credential, which
// the node authorizer alone does not give (upstream's does not either).
func joinBindings() []*rbacv1.ClusterRoleBinding {
	bind := func(name, role, group string) *rbacv1.ClusterRoleBinding {
		return &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: group}},
		}
	}
	return []*rbacv1.ClusterRoleBinding{
		bind("nodeagent:kubelet-bootstrap", "system:node-bootstrapper", NodeBootstrapGroup),
		bind("nodeagent:node-autoapprove-bootstrap", "system:certificates.k8s.io:certificatesigningrequests:nodeclient", NodeBootstrapGroup),
		bind("nodeagent:node-autoapprove-certificate-rotation", "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient", "system:nodes"),
		bind("nodeagent:node-proxier", "system:node-proxier", "system:nodes"),
	}
}

// ensureJoinBindings creates the join bindings that are missing. kubeadm
// creates or updates them at init; an existing one is left as it is here,
// since this runs on every start and an admin may have changed it.
func ensureJoinBindings(ctx context.Context, client kubernetes.Interface) error {
	for _, b := range joinBindings() {
		_, err := client.RbacV1().ClusterRoleBindings().Create(ctx, b, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create clusterrolebinding %s: %w", b.Name, err)
		}
	}
	return nil
}
