package server

import (
	"context"
	"fmt"
	"log/slog"
	"slices"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/nodeagent/nodeagent/pkg/controlplane/pki"
)

// clusterDNSRoleName names the role and binding that give the cluster DNS
// (service account kube-system/kube-dns) what upstream's system:kube-dns
// role lacks: namespaces (kubeadm's system:coredns reads them too: a name
// in a missing namespace is NXDOMAIN) and nodes (the recursion ACL admits
// node addresses).
const clusterDNSRoleName = "nodeagent:cluster-dns"

func clusterDNSRole() *rbacv1.ClusterRole {
	return &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: clusterDNSRoleName},
		Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{""}, Resources: []string{"namespaces", "nodes"}, Verbs: []string{"list", "watch"},
		}},
	}
}

func clusterDNSBinding() *rbacv1.ClusterRoleBinding {
	return &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: clusterDNSRoleName},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: clusterDNSRoleName},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: controllerSANamespace,
			Name: ClusterDNSServiceAccount}},
	}
}

// ensureClusterDNSRole creates the cluster DNS's role and binding, and
// puts back their rules and subjects when they differ: they are the
// server's own, as the bootstrap policy is.
func ensureClusterDNSRole(ctx context.Context, client kubernetes.Interface) error {
	roles, bindings := client.RbacV1().ClusterRoles(), client.RbacV1().ClusterRoleBindings()
	want := clusterDNSRole()
	cur, err := roles.Get(ctx, want.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		_, err = roles.Create(ctx, want, metav1.CreateOptions{})
	case err == nil && !equality.Semantic.DeepEqual(cur.Rules, want.Rules):
		cur.Rules = want.Rules
		_, err = roles.Update(ctx, cur, metav1.UpdateOptions{})
	}
	if err != nil {
		return fmt.Errorf("clusterrole %s: %w", want.Name, err)
	}
	wantB := clusterDNSBinding()
	curB, err := bindings.Get(ctx, wantB.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		_, err = bindings.Create(ctx, wantB, metav1.CreateOptions{})
	case err == nil && (curB.RoleRef != wantB.RoleRef || !slices.Equal(curB.Subjects, wantB.Subjects)):
		// The role reference cannot change in place.
		if err = bindings.Delete(ctx, wantB.Name, metav1.DeleteOptions{}); err == nil {
			_, err = bindings.Create(ctx, wantB, metav1.CreateOptions{})
		}
	}
	if err != nil {
		return fmt.Errorf("clusterrolebinding %s: %w", wantB.Name, err)
	}
	return nil
}

// clusterDNSClient is the cluster DNS's client: service account
// kube-system/kube-dns with a bound token the controller manager's
// identity requests and renews, as a controller's (the DNS runs in this
// process, where kubeadm's CoreDNS gets its token from its pod).
func clusterDNSClient(ctx context.Context, cfg Config, p *pki.PKI, log *slog.Logger) (kubernetes.Interface, error) {
	kcm, err := controllerManagerConfig(cfg, p, 50, 100)
	if err != nil {
		return nil, err
	}
	b, err := newSAClientBuilder(ctx, kcm, log)
	if err != nil {
		return nil, err
	}
	return b.client(ClusterDNSServiceAccount)
}
