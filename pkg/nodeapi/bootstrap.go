package nodeapi

import (
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"net"

	certificatesv1 "k8s.io/api/certificates/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/certificate"
)

// ServerCertPairName is the file-name stem of the requested pair in the
// certificate directory: kubelet-server-current.pem, as the kubelet's.
const ServerCertPairName = "kubelet-server"

// BootstrapConfig says how to request the serving certificate from the
// cluster (the kubelet's serverTLSBootstrap).
type BootstrapConfig struct {
	Client   kubernetes.Interface
	NodeName string
	IPs      []net.IP
	// Dir keeps the issued pair across restarts (<root-dir>/pki).
	Dir string
}

// StartServingCertManager requests a kubernetes.io/kubelet-serving
// certificate for the node's name and addresses through a
// CertificateSigningRequest and renews it before it expires (client-go's
// certificate manager, as the kubelet). Current is nil until a
// certificate is issued; stop the manager with Stop.
func StartServingCertManager(c BootstrapConfig) (certificate.Manager, error) {
	store, err := certificate.NewFileStore(ServerCertPairName, c.Dir, c.Dir, "", "")
	if err != nil {
		return nil, fmt.Errorf("serving certificate store: %w", err)
	}
	m, err := certificate.NewManager(&certificate.Config{
		ClientsetFn: func(*tls.Certificate) (kubernetes.Interface, error) { return c.Client, nil },
		Template: &x509.CertificateRequest{
			Subject:     pkix.Name{CommonName: "system:node:" + c.NodeName, Organization: []string{"system:nodes"}},
			DNSNames:    []string{c.NodeName},
			IPAddresses: c.IPs,
		},
		SignerName: certificatesv1.KubeletServingSignerName,
		// The manager's keys are ECDSA: no key encipherment.
		Usages:           []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageServerAuth},
		CertificateStore: store,
		Name:             ServerCertPairName,
	})
	if err != nil {
		return nil, fmt.Errorf("serving certificate manager: %w", err)
	}
	m.Start()
	return m, nil
}

// GetCertificate serves the issued certificate once there is one and the
// fallback (self-signed) until then, so the server answers from the
// start even while the request waits for approval.
func GetCertificate(m certificate.Manager, fallback tls.Certificate) func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	return func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
		if m != nil {
			if cert := m.Current(); cert != nil {
				return cert, nil
			}
		}
		return &fallback, nil
	}
}
