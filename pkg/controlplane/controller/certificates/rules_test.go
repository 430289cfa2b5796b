package certificates

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"net"
	"slices"
	"strings"
	"testing"

	certificatesv1 "k8s.io/api/certificates/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func request(t *testing.T, cn string, orgs, dns []string, ips ...string) *x509.CertificateRequest {
	t.Helper()
	block, _ := pem.Decode(requestPEM(t, cn, orgs, dns, ips...))
	req, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

func node(name string, addrs ...v1.NodeAddress) *v1.Node {
	return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: v1.NodeStatus{Addresses: addrs}}
}

type approvalCase struct {
	name     string
	signer   string
	user     string
	groups   []string
	usages   []certificatesv1.KeyUsage
	req      *x509.CertificateRequest
	nodes    []*v1.Node
	approve  bool
	whyMatch string
}

func TestApproval(t *testing.T) {
	ip := func(a string) v1.NodeAddress { return v1.NodeAddress{Type: v1.NodeInternalIP, Address: a} }
	host := func(a string) v1.NodeAddress { return v1.NodeAddress{Type: v1.NodeHostName, Address: a} }
	// n1 reports, besides its own, what the reserved rules refuse: the
	// node writes its status itself.
	n1 := node("n1", ip("10.0.0.5"), host("n1.example"),
		ip("127.0.0.1"), ip("::1"), ip("0.0.0.0"), ip("169.254.10.1"), ip("fe80::1"), ip("10.96.0.1"), ip("10.100.3.4"),
		ip("10.0.0.7"), v1.NodeAddress{Type: v1.NodeExternalIP, Address: "203.0.113.9"},
		host("n2"), host("n2.example"), host("N3.Example"),
		host("localhost"), host("kubernetes"), host("kubernetes.default"), host("kubernetes.default.svc"),
		host("kubernetes.default.svc.cluster.local"), host("kubernetes.default.svc.corp.example"), host("*.example"))
	n2 := node("n2", ip("10.0.0.7"), host("n2.example"), v1.NodeAddress{Type: v1.NodeExternalIP, Address: "203.0.113.9"})
	n3 := node("n3", v1.NodeAddress{Type: v1.NodeInternalDNS, Address: "n3.example"})
	all := []*v1.Node{n1, n2, n3}
	nodeGroups := []string{"system:nodes", "system:authenticated"}
	serving := []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageServerAuth}
	client := []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth}
	nodes := []string{"system:nodes"}
	own := func(dns []string, ips ...string) *x509.CertificateRequest {
		return request(t, "system:node:n1", nodes, dns, ips...)
	}
	cases := []approvalCase{
		{"own serving", certificatesv1.KubeletServingSignerName, "system:node:n1", nodeGroups, serving,
			own([]string{"n1", "n1.example"}, "10.0.0.5"), all, true, ""},
		{"own serving, no other nodes", certificatesv1.KubeletServingSignerName, "system:node:n1", nodeGroups, serving,
			own([]string{"n1"}, "10.0.0.5"), []*v1.Node{n1}, true, ""},
		{"foreign IP", certificatesv1.KubeletServingSignerName, "system:node:n1", nodeGroups, serving,
			own([]string{"n1"}, "10.0.0.6"), all, false, "10.0.0.6 is not one of"},
		{"foreign name", certificatesv1.KubeletServingSignerName, "system:node:n1", nodeGroups, serving,
			own([]string{"api.example"}), all, false, `"api.example" is not one of`},
		{"other node's request", certificatesv1.KubeletServingSignerName, "system:node:n2", nodeGroups, serving,
			own([]string{"n1"}), all, false, "not by the node it names"},
		{"no node object", certificatesv1.KubeletServingSignerName, "system:node:n1", nodeGroups, serving,
			own([]string{"n1"}), []*v1.Node{n2}, false, "Node does not exist"},
		{"client usage on serving signer", certificatesv1.KubeletServingSignerName, "system:node:n1", nodeGroups, client,
			own([]string{"n1"}), all, false, "not allowed"},
		{"serving without SANs", certificatesv1.KubeletServingSignerName, "system:node:n1", nodeGroups, serving,
			own(nil), all, false, "at least one DNS or IP"},
		{"wrong organization", certificatesv1.KubeletServingSignerName, "system:node:n1", nodeGroups, serving,
			request(t, "system:node:n1", []string{"system:masters"}, []string{"n1"}), all, false, "organization"},
		{"client request", certificatesv1.KubeAPIServerClientKubeletSignerName, "system:node:n1", nodeGroups, client,
			own(nil), nil, false, "clientApproval"},
		{"user client", certificatesv1.KubeAPIServerClientSignerName, "jane", nil, client,
			request(t, "jane", nil, nil), nil, false, "not a node signer"},
		{"unknown signer", "example.com/x", "system:node:n1", nodeGroups, client,
			own(nil), nil, false, "not a node signer"},
	}
	// Reserved, though n1 reports each of them.
	for _, r := range []struct{ san, why string }{
		{"127.0.0.1", "loopback"},
		{"::1", "loopback"},
		{"0.0.0.0", "unspecified"},
		{"169.254.10.1", "link-local"},
		{"fe80::1", "link-local"},
		{"10.96.0.1", "in the service CIDR 10.96.0.0/12"},
		{"10.100.3.4", "in the service CIDR"},
		{"10.0.0.7", "belongs to node n2"},
		{"203.0.113.9", "belongs to node n2"},
		{"::ffff:10.0.0.7", "belongs to node n2"},
		{"n2", "belongs to node n2"},
		{"n2.example", "belongs to node n2"},
		{"N2.example.", "belongs to node n2"},
		{"n3.example", "belongs to node n3"},
		{"localhost", "the API server's"},
		{"kubernetes", "the API server's"},
		{"kubernetes.default", "the API server's"},
		{"kubernetes.default.svc", "the API server's"},
		{"kubernetes.default.svc.cluster.local", "the API server's"},
		{"Kubernetes.Default.svc.cluster.local.", "the API server's"},
		{"kubernetes.default.svc.corp.example", "the API server's"},
		{"*.example", "wildcard"},
	} {
		var req *x509.CertificateRequest
		if net.ParseIP(r.san) != nil {
			req = own([]string{"n1"}, "10.0.0.5", r.san)
		} else {
			req = own([]string{"n1", r.san}, "10.0.0.5")
		}
		cases = append(cases, approvalCase{"reserved " + r.san, certificatesv1.KubeletServingSignerName, "system:node:n1", nodeGroups, serving,
			req, all, false, r.why})
	}
	for _, c := range cases {
		csr := &certificatesv1.CertificateSigningRequest{Spec: certificatesv1.CertificateSigningRequestSpec{
			SignerName: c.signer, Username: c.user, Groups: c.groups, Usages: c.usages,
		}}
		ok, msg, why := approval(csr, c.req, c.nodes)
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

// reviews is a fake authorizer: the subresources each user may create,
// and the reviews asked.
type reviews struct {
	allowed map[string][]string
	asked   []string
}

func (r *reviews) authorize(_ context.Context, csr *certificatesv1.CertificateSigningRequest, sub string) (bool, error) {
	r.asked = append(r.asked, csr.Spec.Username+" "+sub)
	return slices.Contains(r.allowed[csr.Spec.Username], sub), nil
}

// TestClientApproval: upstream's sarapprove decisions for
// kube-apiserver-client-kubelet requests.
func TestClientApproval(t *testing.T) {
	nodes := []string{"system:nodes"}
	ds, ke, ca := certificatesv1.UsageDigitalSignature, certificatesv1.UsageKeyEncipherment, certificatesv1.UsageClientAuth
	client := []certificatesv1.KeyUsage{ds, ca}
	n1 := request(t, "system:node:n1", nodes, nil)
	boot := "system:bootstrap:abcdef"
	policy := map[string][]string{
		"system:node:n1": {"selfnodeclient"},
		boot:             {"nodeclient"},
	}
	for _, c := range []struct {
		name    string
		user    string
		usages  []certificatesv1.KeyUsage
		req     *x509.CertificateRequest
		approve string // the approval message's start, "" pending
		why     string
		asked   []string
	}{
		{"renewal by the node", "system:node:n1", client, n1, "Auto approving self kubelet client certificate", "",
			[]string{"system:node:n1 selfnodeclient"}},
		{"renewal with key encipherment", "system:node:n1", []certificatesv1.KeyUsage{ds, ke, ca}, n1, "Auto approving self", "",
			[]string{"system:node:n1 selfnodeclient"}},
		{"bootstrap", boot, client, n1, "Auto approving kubelet client certificate after", "",
			[]string{boot + " nodeclient"}},
		{"another node's certificate by a node", "system:node:n2", client, n1, "", "recognized as nodeclient but subject access review was not approved",
			[]string{"system:node:n2 nodeclient"}},
		{"user without permission", "jane", client, n1, "", "not approved", []string{"jane nodeclient"}},
		{"node without selfnodeclient", "system:node:n1", client, n1, "", "recognized as selfnodeclient, nodeclient", nil},
		{"missing client auth", boot, []certificatesv1.KeyUsage{ds}, n1, "", "usages did not match", nil},
		{"server auth", boot, []certificatesv1.KeyUsage{ds, ca, certificatesv1.UsageServerAuth}, n1, "", "usages did not match", nil},
		{"SANs", boot, client, request(t, "system:node:n1", nodes, []string{"n1"}), "", "subjectAltNames are not allowed", nil},
		{"wrong organization", boot, client, request(t, "system:node:n1", []string{"system:masters"}, nil), "", "organization", nil},
		{"not a node", boot, client, request(t, "jane", nodes, nil), "", "common name", nil},
	} {
		r := &reviews{allowed: policy}
		if c.name == "node without selfnodeclient" {
			r.allowed = map[string][]string{}
			c.asked = []string{"system:node:n1 selfnodeclient", "system:node:n1 nodeclient"}
		}
		csr := &certificatesv1.CertificateSigningRequest{Spec: certificatesv1.CertificateSigningRequestSpec{
			SignerName: certificatesv1.KubeAPIServerClientKubeletSignerName, Username: c.user, Usages: c.usages,
		}}
		ok, msg, why, err := clientApproval(t.Context(), csr, c.req, r.authorize)
		switch {
		case err != nil:
			t.Errorf("%s: %v", c.name, err)
		case ok != (c.approve != ""), ok && !strings.HasPrefix(msg, c.approve), !ok && !strings.Contains(why, c.why):
			t.Errorf("%s: approval = %v %q %q, want %q / %q", c.name, ok, msg, why, c.approve, c.why)
		case !slices.Equal(r.asked, c.asked):
			t.Errorf("%s: reviews %q, want %q", c.name, r.asked, c.asked)
		}
	}
}
