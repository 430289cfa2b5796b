package certificates

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"net"
	"strings"
	"testing"

	certificatesv1 "k8s.io/api/certificates/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func request(t *testing.T, cn string, orgs, dns []string, ips ...string) *x509.CertificateRequest {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.CertificateRequest{Subject: pkix.Name{CommonName: cn, Organization: orgs}, DNSNames: dns}
	for _, ip := range ips {
		tmpl.IPAddresses = append(tmpl.IPAddresses, net.ParseIP(ip))
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, tmpl, key)
	if err != nil {
		t.Fatal(err)
	}
	req, err := x509.ParseCertificateRequest(der)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

func TestApproval(t *testing.T) {
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Status: v1.NodeStatus{Addresses: []v1.NodeAddress{
		{Type: v1.NodeInternalIP, Address: "10.0.0.5"}, {Type: v1.NodeHostName, Address: "n1.example"},
	}}}
	nodeGroups := []string{"system:nodes", "system:authenticated"}
	serving := []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageServerAuth}
	client := []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth}
	nodes := []string{"system:nodes"}
	cases := []struct {
		name     string
		signer   string
		user     string
		groups   []string
		usages   []certificatesv1.KeyUsage
		req      *x509.CertificateRequest
		node     *v1.Node
		approve  bool
		whyMatch string
	}{
		{"own serving", certificatesv1.KubeletServingSignerName, "system:node:n1", nodeGroups, serving,
			request(t, "system:node:n1", nodes, []string{"n1", "n1.example"}, "10.0.0.5"), node, true, ""},
		{"foreign IP", certificatesv1.KubeletServingSignerName, "system:node:n1", nodeGroups, serving,
			request(t, "system:node:n1", nodes, []string{"n1"}, "10.0.0.6"), node, false, "10.0.0.6 is not one of"},
		{"foreign name", certificatesv1.KubeletServingSignerName, "system:node:n1", nodeGroups, serving,
			request(t, "system:node:n1", nodes, []string{"api.example"}), node, false, `"api.example" is not one of`},
		{"other node's request", certificatesv1.KubeletServingSignerName, "system:node:n2", nodeGroups, serving,
			request(t, "system:node:n1", nodes, []string{"n1"}), node, false, "not by the node it names"},
		{"no node object", certificatesv1.KubeletServingSignerName, "system:node:n1", nodeGroups, serving,
			request(t, "system:node:n1", nodes, []string{"n1"}), nil, false, "Node does not exist"},
		{"client usage on serving signer", certificatesv1.KubeletServingSignerName, "system:node:n1", nodeGroups, client,
			request(t, "system:node:n1", nodes, []string{"n1"}), node, false, "not allowed"},
		{"serving without SANs", certificatesv1.KubeletServingSignerName, "system:node:n1", nodeGroups, serving,
			request(t, "system:node:n1", nodes, nil), node, false, "at least one DNS or IP"},
		{"wrong organization", certificatesv1.KubeletServingSignerName, "system:node:n1", nodeGroups, serving,
			request(t, "system:node:n1", []string{"system:masters"}, []string{"n1"}), node, false, "organization"},
		{"own client", certificatesv1.KubeAPIServerClientKubeletSignerName, "system:node:n1", nodeGroups, client,
			request(t, "system:node:n1", nodes, nil), nil, true, ""},
		{"client with SANs", certificatesv1.KubeAPIServerClientKubeletSignerName, "system:node:n1", nodeGroups, client,
			request(t, "system:node:n1", nodes, []string{"n1"}), nil, false, "subjectAltNames are not allowed"},
		{"user client", certificatesv1.KubeAPIServerClientSignerName, "jane", nil, client,
			request(t, "jane", nil, nil), nil, false, "not a node signer"},
		{"unknown signer", "example.com/x", "system:node:n1", nodeGroups, client,
			request(t, "system:node:n1", nodes, nil), nil, false, "not a node signer"},
	}
	for _, c := range cases {
		csr := &certificatesv1.CertificateSigningRequest{Spec: certificatesv1.CertificateSigningRequestSpec{
			SignerName: c.signer, Username: c.user, Groups: c.groups, Usages: c.usages,
		}}
		ok, msg, why := approval(csr, c.req, c.node)
		if ok != c.approve || (ok && msg == "") || !strings.Contains(why, c.whyMatch) {
			t.Errorf("%s: approval = %v %q %q, want %v (%q)", c.name, ok, msg, why, c.approve, c.whyMatch)
		}
	}
}

func TestX509Usages(t *testing.T) {
	ku, ext := x509Usages([]certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageKeyEncipherment, certificatesv1.UsageServerAuth})
	if ku != x509.KeyUsageDigitalSignature|x509.KeyUsageKeyEncipherment || len(ext) != 1 || ext[0] != x509.ExtKeyUsageServerAuth {
		t.Errorf("usages = %v %v", ku, ext)
	}
}
