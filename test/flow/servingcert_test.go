package flow

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	certificatesv1 "k8s.io/api/certificates/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeagent/nodeagent/pkg/controlplane/pki"
	"github.com/nodeagent/nodeagent/test/framework"
)

// waitServingCertIssued waits until the agent serves the certificate it
// requested from the cluster (serverTLSBootstrap): one the kubelet-serving
// CA signed for the node's name, which the API server verifies. Until
// then it serves a self-signed one.
func waitServingCertIssued(t *testing.T, a *framework.Agent, node string) {
	t.Helper()
	caPEM, err := os.ReadFile(filepath.Join(dataDir, "pki", pki.KubeletServingCACertFile))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	addr := fmt.Sprintf("127.0.0.1:%d", a.SecurePort)
	waitFor(t, apiTimeout, "the agent to serve a certificate the kubelet-serving CA signed", func() (bool, error) {
		if err := approveIfAddressShared(node); err != nil {
			return false, err
		}
		conn, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true})
		if err != nil {
			return false, err
		}
		defer conn.Close()
		certs := conn.ConnectionState().PeerCertificates
		if len(certs) == 0 {
			return false, errors.New("no certificate")
		}
		_, err = certs[0].Verify(x509.VerifyOptions{Roots: pool, DNSName: node, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
		return err == nil, err
	})
}

// approveIfAddressShared approves the node's pending serving requests by
// hand, as an administrator would, when another node reports one of its
// addresses (agents on this host without a node IP of their own share
// its address): the controllers never approve a certificate for an
// address another node claims.
func approveIfAddressShared(node string) error {
	ctx := context.Background()
	nodes, err := admin.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	ips := func(n *v1.Node) []string {
		var out []string
		for _, a := range n.Status.Addresses {
			if a.Type == v1.NodeInternalIP || a.Type == v1.NodeExternalIP {
				out = append(out, a.Address)
			}
		}
		return out
	}
	i := slices.IndexFunc(nodes.Items, func(n v1.Node) bool { return n.Name == node })
	if i < 0 {
		return nil
	}
	shared := slices.ContainsFunc(nodes.Items, func(n v1.Node) bool {
		return n.Name != node && slices.ContainsFunc(ips(&n), func(ip string) bool { return slices.Contains(ips(&nodes.Items[i]), ip) })
	})
	if !shared {
		return nil
	}
	csrs, err := admin.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{FieldSelector: "spec.signerName=" + certificatesv1.KubeletServingSignerName})
	if err != nil {
		return err
	}
	for _, csr := range csrs.Items {
		if csr.Spec.Username != "system:node:"+node || len(csr.Status.Conditions) > 0 {
			continue
		}
		csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
			Type: certificatesv1.CertificateApproved, Status: v1.ConditionTrue,
			Reason: "FlowTestApprove", Message: "the node shares its address with another node",
		})
		if _, err := admin.CertificatesV1().CertificateSigningRequests().UpdateApproval(ctx, csr.Name, &csr, metav1.UpdateOptions{}); err != nil && !apierrors.IsConflict(err) {
			return err
		}
	}
	return nil
}

// The agent's serving certificate comes from the cluster: a
// kubelet-serving request, approved and signed by the control plane,
// kept in <root-dir>/pki as the kubelet keeps it.
func TestServingCertificateFromCluster(t *testing.T) {
	a := newAgent(t)
	waitServingCertIssued(t, a, nodeName)
	out := mustKubectl(t, "get", "csr", "--field-selector=spec.signerName=kubernetes.io/kubelet-serving", "-o",
		"jsonpath={range .items[*]}{.spec.username}{\" \"}{.status.conditions[0].type}{\"\\n\"}{end}")
	if want := "system:node:" + nodeName + " Approved"; !slices.Contains(strings.Split(out, "\n"), want) {
		t.Errorf("kubectl get csr: %q, want a line %q", out, want)
	}
	pair := filepath.Join(a.RootDir, "pki", "kubelet-server-current.pem")
	if _, err := tls.LoadX509KeyPair(pair, pair); err != nil {
		t.Errorf("issued pair not kept: %v", err)
	}
}
