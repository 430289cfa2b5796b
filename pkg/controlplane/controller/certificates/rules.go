package certificates

import (
	"crypto/x509"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/nodeagent/nodeagent/pkg/controlplane/registry"
)

// Upstream's node identities.
const (
	nodeUserPrefix = "system:node:"
	nodesGroup     = "system:nodes"
)

// maxValidity is the signer's default and ceiling (kube-controller-manager's
// --cluster-signing-duration, 1 year).
const maxValidity = 365 * 24 * time.Hour

// signerRule is what one signer accepts and how it signs.
type signerRule struct {
	allowed  sets.Set[certificatesv1.KeyUsage] // the usages a request may ask for
	required certificatesv1.KeyUsage           // the one it must ask for
	check    func(*x509.CertificateRequest) error
}

var signers = map[string]signerRule{
	certificatesv1.KubeletServingSignerName: {
		allowed:  sets.New(certificatesv1.UsageDigitalSignature, certificatesv1.UsageKeyEncipherment, certificatesv1.UsageServerAuth),
		required: certificatesv1.UsageServerAuth,
		check:    checkKubeletServing,
	},
	certificatesv1.KubeAPIServerClientKubeletSignerName: {
		allowed:  sets.New(certificatesv1.UsageDigitalSignature, certificatesv1.UsageKeyEncipherment, certificatesv1.UsageClientAuth),
		required: certificatesv1.UsageClientAuth,
		check:    checkKubeletClient,
	},
	certificatesv1.KubeAPIServerClientSignerName: {
		allowed:  sets.New(certificatesv1.UsageDigitalSignature, certificatesv1.UsageKeyEncipherment, certificatesv1.UsageClientAuth),
		required: certificatesv1.UsageClientAuth,
		check:    func(*x509.CertificateRequest) error { return nil },
	},
}

// checkSigner applies the request's signer rules; the error is the Failed
// condition's message.
func checkSigner(csr *certificatesv1.CertificateSigningRequest, req *x509.CertificateRequest) error {
	rule := signers[csr.Spec.SignerName]
	for _, u := range csr.Spec.Usages {
		if !rule.allowed.Has(u) {
			return fmt.Errorf("usage %q is not allowed for signer %s, allowed: %v", u, csr.Spec.SignerName, sets.List(rule.allowed))
		}
	}
	if !slices.Contains(csr.Spec.Usages, rule.required) {
		return fmt.Errorf("missing required usage %q", rule.required)
	}
	return rule.check(req)
}

// checkNodeSubject: CN system:node:<name>, O exactly system:nodes.
func checkNodeSubject(req *x509.CertificateRequest) error {
	if !strings.HasPrefix(req.Subject.CommonName, nodeUserPrefix) || len(req.Subject.CommonName) == len(nodeUserPrefix) {
		return fmt.Errorf("subject common name %q does not begin with %q", req.Subject.CommonName, nodeUserPrefix)
	}
	if !slices.Equal(req.Subject.Organization, []string{nodesGroup}) {
		return fmt.Errorf("subject organization %v is not [%s]", req.Subject.Organization, nodesGroup)
	}
	return nil
}

func checkKubeletServing(req *x509.CertificateRequest) error {
	if err := checkNodeSubject(req); err != nil {
		return err
	}
	switch {
	case len(req.EmailAddresses) > 0 || len(req.URIs) > 0:
		return fmt.Errorf("email and URI subjectAltNames are not allowed")
	case len(req.DNSNames) == 0 && len(req.IPAddresses) == 0:
		return fmt.Errorf("at least one DNS or IP subjectAltName is required")
	}
	return nil
}

func checkKubeletClient(req *x509.CertificateRequest) error {
	if err := checkNodeSubject(req); err != nil {
		return err
	}
	if len(req.DNSNames)+len(req.IPAddresses)+len(req.EmailAddresses)+len(req.URIs) > 0 {
		return fmt.Errorf("subjectAltNames are not allowed")
	}
	return nil
}

// x509Usages maps the request's usages onto the certificate's.
func x509Usages(usages []certificatesv1.KeyUsage) (x509.KeyUsage, []x509.ExtKeyUsage) {
	var ku x509.KeyUsage
	var ext []x509.ExtKeyUsage
	for _, u := range usages {
		switch u {
		case certificatesv1.UsageDigitalSignature:
			ku |= x509.KeyUsageDigitalSignature
		case certificatesv1.UsageKeyEncipherment:
			ku |= x509.KeyUsageKeyEncipherment
		case certificatesv1.UsageServerAuth:
			ext = append(ext, x509.ExtKeyUsageServerAuth)
		case certificatesv1.UsageClientAuth:
			ext = append(ext, x509.ExtKeyUsageClientAuth)
		}
	}
	return ku, ext
}

// validity is spec.expirationSeconds within the signer's ceiling.
func validity(csr *certificatesv1.CertificateSigningRequest) time.Duration {
	if e := csr.Spec.ExpirationSeconds; e != nil && time.Duration(*e)*time.Second < maxValidity {
		return time.Duration(*e) * time.Second
	}
	return maxValidity
}

// approval decides whether to approve a serving request automatically
// (client requests are clientApproval's): a node asking for a serving certificate
// that names only itself and its own addresses, none of them reserved
// (see reserved). nodes are all the Nodes (the requester's among them).
// ok false leaves the request pending; why says what is missing, for the
// log.
func approval(csr *certificatesv1.CertificateSigningRequest, req *x509.CertificateRequest, nodes []*v1.Node) (ok bool, msg, why string) {
	_, known := signers[csr.Spec.SignerName]
	if !known || csr.Spec.SignerName == certificatesv1.KubeAPIServerClientSignerName {
		return false, "", "not a node signer"
	}
	if csr.Spec.SignerName == certificatesv1.KubeAPIServerClientKubeletSignerName {
		return false, "", "a client request is decided by clientApproval"
	}
	if !slices.Contains(csr.Spec.Groups, nodesGroup) || csr.Spec.Username != req.Subject.CommonName {
		return false, "", fmt.Sprintf("requested by %q, not by the node it names (%q)", csr.Spec.Username, req.Subject.CommonName)
	}
	if err := checkSigner(csr, req); err != nil {
		return false, "", err.Error()
	}
	name := strings.TrimPrefix(req.Subject.CommonName, nodeUserPrefix)
	i := slices.IndexFunc(nodes, func(n *v1.Node) bool { return n.Name == name })
	if i < 0 {
		return false, "", "its Node does not exist"
	}
	if err := reserved(req, nodes[i], nodes); err != nil {
		return false, "", err.Error()
	}
	if err := ownNames(req, nodes[i]); err != nil {
		return false, "", err.Error()
	}
	return true, "Auto approving kubelet serving certificate for the node's own names and addresses.", ""
}

// ownNames: every DNS name is the node's name or a host name it reports,
// every IP one of its addresses.
func ownNames(req *x509.CertificateRequest, node *v1.Node) error {
	names, ips := nodeNames(node)
	for _, n := range req.DNSNames {
		if !names.Has(n) {
			return fmt.Errorf("DNS name %q is not one of node %s's names", n, node.Name)
		}
	}
	for _, ip := range req.IPAddresses {
		if a, ok := netip.AddrFromSlice(ip); !ok || !ips.Has(a.Unmap()) {
			return fmt.Errorf("IP address %s is not one of node %s's addresses", ip, node.Name)
		}
	}
	return nil
}

// serviceCIDR is where the API server's own service IP (and every other
// service's) comes from.
var serviceCIDR = netip.MustParsePrefix(registry.ServiceClusterIPRange)

// apiServerNames are the API server's names, which its own serving
// certificate has: its service's (kubernetes.default.svc.<domain> for any
// domain too) and localhost.
var apiServerNames = sets.New("localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc")

// reserved refuses what a node's serving certificate may not name, even
// if the node reports it in its status (which the node writes itself): an
// address that is not a node's own (loopback, unspecified, link-local,
// multicast) or a service's, an address or name another Node reports, a
// wildcard, and the API server's names.
func reserved(req *x509.CertificateRequest, node *v1.Node, nodes []*v1.Node) error {
	otherNames, otherIPs := map[string]string{}, map[netip.Addr]string{}
	for _, n := range nodes {
		if n.Name == node.Name {
			continue
		}
		names, ips := nodeNames(n)
		for name := range names {
			otherNames[canonicalDNS(name)] = n.Name
		}
		for ip := range ips {
			otherIPs[ip] = n.Name
		}
	}
	for _, n := range req.DNSNames {
		name := canonicalDNS(n)
		switch {
		case strings.Contains(name, "*"):
			return fmt.Errorf("DNS name %q is a wildcard", n)
		case apiServerNames.Has(name) || strings.HasPrefix(name, "kubernetes.default.svc.") || strings.HasSuffix(name, ".localhost"):
			return fmt.Errorf("DNS name %q is the API server's", n)
		case otherNames[name] != "":
			return fmt.Errorf("DNS name %q belongs to node %s", n, otherNames[name])
		}
	}
	for _, ip := range req.IPAddresses {
		a, ok := netip.AddrFromSlice(ip)
		a = a.Unmap()
		switch {
		case !ok:
			return fmt.Errorf("IP address %v is malformed", ip)
		case a.IsLoopback(), a.IsUnspecified(), a.IsLinkLocalUnicast(), a.IsMulticast():
			return fmt.Errorf("IP address %s is loopback, unspecified, link-local or multicast", a)
		case serviceCIDR.Contains(a):
			return fmt.Errorf("IP address %s is in the service CIDR %s", a, serviceCIDR)
		case otherIPs[a] != "":
			return fmt.Errorf("IP address %s belongs to node %s", a, otherIPs[a])
		}
	}
	return nil
}

// nodeNames is what a Node reports as its names (its own, host and DNS
// names) and its IP addresses.
func nodeNames(node *v1.Node) (sets.Set[string], sets.Set[netip.Addr]) {
	names, ips := sets.New(node.Name), sets.New[netip.Addr]()
	for _, a := range node.Status.Addresses {
		switch a.Type {
		case v1.NodeHostName, v1.NodeInternalDNS, v1.NodeExternalDNS:
			names.Insert(a.Address)
		case v1.NodeInternalIP, v1.NodeExternalIP:
			if ip, err := netip.ParseAddr(a.Address); err == nil {
				ips.Insert(ip.Unmap())
			}
		}
	}
	return names, ips
}

// canonicalDNS is how TLS clients compare names: case-insensitively,
// without a trailing dot.
func canonicalDNS(name string) string {
	return strings.TrimSuffix(strings.ToLower(name), ".")
}
