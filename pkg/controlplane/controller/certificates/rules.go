package certificates

import (
	"crypto/x509"
	"fmt"
	"net"
	"slices"
	"strings"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
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

// approval decides whether to approve a request automatically: a node
// asking for its own client certificate, or for a serving certificate
// that names only itself and its own addresses. ok false leaves the
// request pending; why says what is missing, for the log.
func approval(csr *certificatesv1.CertificateSigningRequest, req *x509.CertificateRequest, node *v1.Node) (ok bool, msg, why string) {
	_, known := signers[csr.Spec.SignerName]
	if !known || csr.Spec.SignerName == certificatesv1.KubeAPIServerClientSignerName {
		return false, "", "not a node signer"
	}
	if !slices.Contains(csr.Spec.Groups, nodesGroup) || csr.Spec.Username != req.Subject.CommonName {
		return false, "", fmt.Sprintf("requested by %q, not by the node it names (%q)", csr.Spec.Username, req.Subject.CommonName)
	}
	if err := checkSigner(csr, req); err != nil {
		return false, "", err.Error()
	}
	if csr.Spec.SignerName == certificatesv1.KubeAPIServerClientKubeletSignerName {
		return true, "Auto approving self kubelet client certificate after SubjectAccessReview.", ""
	}
	if node == nil {
		return false, "", "its Node does not exist"
	}
	if err := ownNames(req, node); err != nil {
		return false, "", err.Error()
	}
	return true, "Auto approving kubelet serving certificate for the node's own names and addresses.", ""
}

// ownNames: every DNS name is the node's name or a host name it reports,
// every IP one of its addresses.
func ownNames(req *x509.CertificateRequest, node *v1.Node) error {
	names := sets.New(node.Name)
	ips := sets.New[string]()
	for _, a := range node.Status.Addresses {
		switch a.Type {
		case v1.NodeHostName, v1.NodeInternalDNS, v1.NodeExternalDNS:
			names.Insert(a.Address)
		case v1.NodeInternalIP, v1.NodeExternalIP:
			if ip := net.ParseIP(a.Address); ip != nil {
				ips.Insert(ip.String())
			}
		}
	}
	for _, n := range req.DNSNames {
		if !names.Has(n) {
			return fmt.Errorf("DNS name %q is not one of node %s's names", n, node.Name)
		}
	}
	for _, ip := range req.IPAddresses {
		if !ips.Has(ip.String()) {
			return fmt.Errorf("IP address %s is not one of node %s's addresses", ip, node.Name)
		}
	}
	return nil
}
