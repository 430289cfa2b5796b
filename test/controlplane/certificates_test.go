package controlplane_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/nodeagent/nodeagent/pkg/controlplane/pki"
)

// csrPEM is a PEM certificate request for cn/orgs with the given names.
func csrPEM(t *testing.T, cn string, orgs, dnsNames []string, ips []net.IP) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{
		Subject: pkix.Name{CommonName: cn, Organization: orgs}, DNSNames: dnsNames, IPAddresses: ips,
	}, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
}

func newCSR(name, signer string, request []byte, usages ...certificatesv1.KeyUsage) *certificatesv1.CertificateSigningRequest {
	return &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request: request, SignerName: signer, Usages: usages,
			Username: "mallory", Groups: []string{"system:masters"}, // the server replaces these
		},
	}
}

// waitIssued waits for the request's certificate and parses it.
func waitIssued(t *testing.T, cs kubernetes.Interface, name string) (*certificatesv1.CertificateSigningRequest, *x509.Certificate) {
	t.Helper()
	var csr *certificatesv1.CertificateSigningRequest
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		var err error
		csr, err = cs.CertificatesV1().CertificateSigningRequests().Get(ctx, name, metav1.GetOptions{})
		return err == nil && len(csr.Status.Certificate) > 0, nil
	})
	if err != nil {
		t.Fatalf("certificate for %s not issued: %v (last: %+v)", name, err, csr.Status)
	}
	block, _ := pem.Decode(csr.Status.Certificate)
	if block == nil {
		t.Fatalf("%s: certificate is not PEM", name)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return csr, cert
}

// createNode creates an unschedulable node as cs with the given
// addresses in its status.
func createNode(t *testing.T, cs kubernetes.Interface, name string, addrs ...corev1.NodeAddress) {
	t.Helper()
	ctx := context.Background()
	if _, err := cs.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.NodeSpec{Unschedulable: true}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	admin := clientset(t, adminConfig)
	t.Cleanup(func() { _ = admin.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{}) })
	// The controllers update new nodes too (pod CIDR, taints).
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		n.Status.Addresses = addrs
		_, err = cs.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A node asks for its serving certificate through the API (as agents do
// with serverTLSBootstrap): the controllers approve a request naming the
// node's own name and address and sign it with the kubelet-serving CA; a
// request for someone else's address, another node's or the API server's
// name stays pending until an administrator approves it with kubectl, and
// a denied one is never signed.
func TestCertificateSigningRequests(t *testing.T) {
	const node, other = "e2e-csr-node", "e2e-csr-other"
	nodeIP, otherIP := net.ParseIP("192.0.2.77"), net.ParseIP("192.0.2.79")
	admin := clientset(t, adminConfig)
	ctx := context.Background()
	names := []string{"e2e-csr-foreign", "e2e-csr-othernode", "e2e-csr-apiserver", "e2e-csr-own", "e2e-csr-denied", "e2e-csr-client"}
	t.Cleanup(func() {
		for _, n := range names {
			_ = admin.CertificatesV1().CertificateSigningRequests().Delete(ctx, n, metav1.DeleteOptions{})
		}
	})
	createNode(t, admin, other, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: otherIP.String()})
	// The node reports the other node's address and the API server's name
	// as its own too (it writes its status itself).
	nodeCS := clientset(t, nodeKubeconfig(t, node))
	createNode(t, nodeCS, node, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: nodeIP.String()},
		corev1.NodeAddress{Type: corev1.NodeHostName, Address: node},
		corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: otherIP.String()},
		corev1.NodeAddress{Type: corev1.NodeHostName, Address: "kubernetes.default.svc"})

	serving := []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageServerAuth}
	nodeCN, nodeOrgs := "system:node:"+node, []string{"system:nodes"}
	// Created first: the single worker has looked at them before the own
	// request is issued.
	foreign := newCSR(names[0], certificatesv1.KubeletServingSignerName, csrPEM(t, nodeCN, nodeOrgs, []string{node}, []net.IP{net.ParseIP("192.0.2.78")}), serving...)
	otherNode := newCSR(names[1], certificatesv1.KubeletServingSignerName, csrPEM(t, nodeCN, nodeOrgs, []string{node}, []net.IP{nodeIP, otherIP}), serving...)
	apiServer := newCSR(names[2], certificatesv1.KubeletServingSignerName, csrPEM(t, nodeCN, nodeOrgs, []string{node, "kubernetes.default.svc"}, []net.IP{nodeIP}), serving...)
	own := newCSR(names[3], certificatesv1.KubeletServingSignerName, csrPEM(t, nodeCN, nodeOrgs, []string{node}, []net.IP{nodeIP}), serving...)
	for _, csr := range []*certificatesv1.CertificateSigningRequest{foreign, otherNode, apiServer, own} {
		if _, err := nodeCS.CertificatesV1().CertificateSigningRequests().Create(ctx, csr, metav1.CreateOptions{}); err != nil {
			t.Fatalf("node creates %s: %v", csr.Name, err)
		}
	}
	got, cert := waitIssued(t, nodeCS, own.Name)
	if got.Spec.Username != nodeCN || !slices.Contains(got.Spec.Groups, "system:nodes") || slices.Contains(got.Spec.Groups, "system:masters") {
		t.Errorf("requester = %q %v, want the node's identity stamped by the server", got.Spec.Username, got.Spec.Groups)
	}
	if c := got.Status.Conditions; len(c) == 0 || c[0].Type != certificatesv1.CertificateApproved || c[0].Reason != "AutoApproved" {
		t.Errorf("conditions = %+v, want Approved/AutoApproved", c)
	}
	checkChainsToCA(t, cert, x509.ExtKeyUsageServerAuth)
	if !slices.Equal(cert.DNSNames, []string{node}) || len(cert.IPAddresses) != 1 || !cert.IPAddresses[0].Equal(nodeIP) {
		t.Errorf("SANs = %v %v", cert.DNSNames, cert.IPAddresses)
	}
	for _, csr := range []*certificatesv1.CertificateSigningRequest{otherNode, apiServer} {
		got, err := admin.CertificatesV1().CertificateSigningRequests().Get(ctx, csr.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Status.Conditions) > 0 || len(got.Status.Certificate) > 0 {
			t.Errorf("%s: status %+v, want it pending", csr.Name, got.Status)
		}
	}

	out := mustKubectl(t, "get", "csr", foreign.Name, own.Name)
	r := rows(out)
	if len(r) != 3 || r[1][0] != foreign.Name || r[1][len(r[1])-1] != "Pending" || r[2][len(r[2])-1] != "Approved,Issued" {
		t.Fatalf("kubectl get csr:\n%s", out)
	}
	if !strings.Contains(r[0][2], "SIGNERNAME") || r[2][2] != certificatesv1.KubeletServingSignerName || r[2][3] != nodeCN {
		t.Errorf("kubectl get csr columns:\n%s", out)
	}

	// The node may not approve its own request.
	foreignNow, err := nodeCS.CertificatesV1().CertificateSigningRequests().Get(ctx, foreign.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	foreignNow.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{{Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue}}
	if _, err := nodeCS.CertificatesV1().CertificateSigningRequests().UpdateApproval(ctx, foreign.Name, foreignNow, metav1.UpdateOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("node approving a request: err = %v, want Forbidden", err)
	}
	mustKubectl(t, "certificate", "approve", foreign.Name)
	_, cert = waitIssued(t, admin, foreign.Name)
	if !cert.IPAddresses[0].Equal(net.ParseIP("192.0.2.78")) {
		t.Errorf("approved by hand: SANs %v", cert.IPAddresses)
	}
	checkChainsToCA(t, cert, x509.ExtKeyUsageServerAuth)

	denied := newCSR(names[4], certificatesv1.KubeAPIServerClientSignerName, csrPEM(t, "jane", nil, nil, nil), certificatesv1.UsageClientAuth)
	client := newCSR(names[5], certificatesv1.KubeAPIServerClientSignerName, csrPEM(t, "jane", []string{"devs"}, nil, nil), certificatesv1.UsageClientAuth)
	for _, csr := range []*certificatesv1.CertificateSigningRequest{denied, client} {
		if _, err := admin.CertificatesV1().CertificateSigningRequests().Create(ctx, csr, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	mustKubectl(t, "certificate", "deny", denied.Name)
	mustKubectl(t, "certificate", "approve", client.Name)
	_, cert = waitIssued(t, admin, client.Name)
	checkChainsToCA(t, cert, x509.ExtKeyUsageClientAuth)
	if cert.Subject.CommonName != "jane" || !slices.Equal(cert.Subject.Organization, []string{"devs"}) {
		t.Errorf("client certificate subject = %v", cert.Subject)
	}
	// Signed in order: the denied one was looked at before.
	d, err := admin.CertificatesV1().CertificateSigningRequests().Get(ctx, denied.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Status.Certificate) > 0 || len(d.Status.Conditions) != 1 || d.Status.Conditions[0].Type != certificatesv1.CertificateDenied {
		t.Errorf("denied request: %+v", d.Status)
	}
}

// TestCertificateSigningRequestValidation: upstream's checks on create.
func TestCertificateSigningRequestValidation(t *testing.T) {
	admin := clientset(t, adminConfig)
	ctx := context.Background()
	good := csrPEM(t, "x", nil, nil, nil)
	short := int32(60)
	cases := []struct {
		name string
		csr  *certificatesv1.CertificateSigningRequest
		want string
	}{
		{"not a request", newCSR("e2e-csr-bad1", certificatesv1.KubeAPIServerClientSignerName, []byte("nope"), certificatesv1.UsageClientAuth), "spec.request"},
		{"no usages", newCSR("e2e-csr-bad2", certificatesv1.KubeAPIServerClientSignerName, good), "spec.usages: Required value"},
		{"bad signer", newCSR("e2e-csr-bad3", "nodomain", good, certificatesv1.UsageClientAuth), "spec.signerName"},
		{"short", func() *certificatesv1.CertificateSigningRequest {
			c := newCSR("e2e-csr-bad4", certificatesv1.KubeAPIServerClientSignerName, good, certificatesv1.UsageClientAuth)
			c.Spec.ExpirationSeconds = &short
			return c
		}(), "may not specify a duration less than 600 seconds"},
	}
	for _, c := range cases {
		_, err := admin.CertificatesV1().CertificateSigningRequests().Create(ctx, c.csr, metav1.CreateOptions{})
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want Invalid mentioning %q", c.name, err, c.want)
			_ = admin.CertificatesV1().CertificateSigningRequests().Delete(ctx, c.csr.Name, metav1.DeleteOptions{})
		}
	}
}

// checkChainsToCA: serving certificates chain to the kubelet-serving CA
// alone, client certificates to the cluster CA alone.
func checkChainsToCA(t *testing.T, cert *x509.Certificate, usage x509.ExtKeyUsage) {
	t.Helper()
	signer, other := pki.CACertFile, pki.KubeletServingCACertFile
	if usage == x509.ExtKeyUsageServerAuth {
		signer, other = other, signer
	}
	opts := x509.VerifyOptions{Roots: caPool(t, signer), KeyUsages: []x509.ExtKeyUsage{usage}}
	if _, err := cert.Verify(opts); err != nil {
		t.Errorf("issued certificate does not verify against %s: %v", signer, err)
	}
	opts.Roots = caPool(t, other)
	if _, err := cert.Verify(opts); err == nil {
		t.Errorf("issued certificate verifies against %s", other)
	}
}

// caPool reads one of the shared server's CAs.
func caPool(t *testing.T, file string) *x509.CertPool {
	t.Helper()
	caPEM, err := os.ReadFile(filepath.Join(shared.cfg.DataDir, "pki", file))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		t.Fatalf("%s: no certificate", file)
	}
	return pool
}
