package nodeapi

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"path/filepath"
	"time"

	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
)

// The self-signed pair's file names in the certificate directory, the
// kubelet's.
const (
	SelfSignedCertName = "kubelet.crt"
	SelfSignedKeyName  = "kubelet.key"
)

// CertConfig says where the serving certificate comes from.
type CertConfig struct {
	// CertFile and KeyFile (tlsCertFile, tlsPrivateKeyFile), when set, are
	// the certificate.
	CertFile, KeyFile string
	// Dir keeps the self-signed pair otherwise (<root-dir>/pki).
	Dir string
	// Host and IPs are the self-signed certificate's names.
	Host string
	IPs  []net.IP
}

// ServingCertificate loads the configured pair or, like the kubelet
// without tlsCertFile, a self-signed one generated on first use and kept
// for later starts. The API server does not verify kubelet certificates
// unless told to.
func ServingCertificate(c CertConfig) (tls.Certificate, error) {
	certFile, keyFile := c.CertFile, c.KeyFile
	if certFile == "" {
		certFile, keyFile = filepath.Join(c.Dir, SelfSignedCertName), filepath.Join(c.Dir, SelfSignedKeyName)
		if err := ensureSelfSigned(certFile, keyFile, c.Host, c.IPs); err != nil {
			return tls.Certificate{}, err
		}
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("load serving certificate %s: %w", certFile, err)
	}
	return cert, nil
}

// ensureSelfSigned generates the pair unless a usable one is there. An
// expired one is replaced (the kubelet keeps serving it).
func ensureSelfSigned(certFile, keyFile, host string, ips []net.IP) error {
	if pair, err := tls.LoadX509KeyPair(certFile, keyFile); err == nil && time.Now().Before(pair.Leaf.NotAfter) {
		return nil
	}
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey(host, ips, nil)
	if err != nil {
		return fmt.Errorf("generate self-signed serving certificate: %w", err)
	}
	if err := certutil.WriteCert(certFile, certPEM); err != nil {
		return fmt.Errorf("write %s: %w", certFile, err)
	}
	if err := keyutil.WriteKey(keyFile, keyPEM); err != nil {
		return fmt.Errorf("write %s: %w", keyFile, err)
	}
	return nil
}

// ClientCAPool reads the PEM bundle in file, else uses fallback (the
// kubeconfig's CA when joined); nil when there is neither.
func ClientCAPool(file string, fallback []byte) (*x509.CertPool, error) {
	switch {
	case file != "":
		pool, err := certutil.NewPool(file)
		if err != nil {
			return nil, fmt.Errorf("client CA file: %w", err)
		}
		return pool, nil
	case len(fallback) > 0:
		pool, err := certutil.NewPoolFromBytes(fallback)
		if err != nil {
			return nil, fmt.Errorf("client CA: %w", err)
		}
		return pool, nil
	}
	return nil, nil
}

// TLSConfig asks for, but does not require, a client certificate: the
// authenticator verifies it, so that token and anonymous callers still
// get in.
func TLSConfig(cert tls.Certificate, clientCAs *x509.CertPool) *tls.Config {
	return TLSConfigDynamic(func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return &cert, nil }, clientCAs)
}

// TLSConfigDynamic is TLSConfig with the certificate chosen at each
// handshake (a requested certificate replaces the fallback, renewals take
// effect without a restart).
func TLSConfigDynamic(get func(*tls.ClientHelloInfo) (*tls.Certificate, error), clientCAs *x509.CertPool) *tls.Config {
	return &tls.Config{
		GetCertificate: get,
		ClientAuth:     tls.RequestClientCert,
		ClientCAs:      clientCAs,
		MinVersion:     tls.VersionTLS12,
	}
}
