package pki

import (
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// leafSpec describes a certificate signed by a CA.
type leafSpec struct {
	name     string // file name stem, relative to the directory
	cn       string
	orgs     []string
	dnsNames []string
	ips      []net.IP
	usages   []x509.ExtKeyUsage
}

// clientLeaf is a client certificate for user cn in group org.
func clientLeaf(name, cn, org string) leafSpec {
	return leafSpec{name: name, cn: cn, orgs: []string{org}, usages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
}

// paths returns where spec's pair lives in dir.
func (spec leafSpec) paths(dir string) (certPath, keyPath string) {
	return filepath.Join(dir, spec.name+".crt"), filepath.Join(dir, spec.name+".key")
}

// ensureLeaf reuses <dir>/<name>.crt/.key when still good for spec, else
// issues and writes a new pair signed by ca.
func (ca *CA) ensureLeaf(dir string, spec leafSpec, log *slog.Logger) (certPEM, keyPEM []byte, err error) {
	certPath, keyPath := spec.paths(dir)
	certPEM, certErr := os.ReadFile(certPath)
	keyPEM, keyErr := os.ReadFile(keyPath)
	if certErr == nil && keyErr == nil {
		reason := ca.renewReason(certPEM, keyPEM, spec)
		if reason == "" {
			return certPEM, keyPEM, nil
		}
		log.Info("renewing certificate", "cert", certPath, "reason", reason)
	} else if !errors.Is(certErr, fs.ErrNotExist) && certErr != nil {
		return nil, nil, fmt.Errorf("read %s: %w", certPath, certErr)
	} else if !errors.Is(keyErr, fs.ErrNotExist) && keyErr != nil {
		return nil, nil, fmt.Errorf("read %s: %w", keyPath, keyErr)
	}
	if certPEM, keyPEM, err = ca.issue(spec, LeafValidity); err != nil {
		return nil, nil, err
	}
	if err := writeFile(keyPath, keyPEM, 0o600); err != nil {
		return nil, nil, err
	}
	if err := writeFile(certPath, certPEM, 0o644); err != nil {
		return nil, nil, err
	}
	return certPEM, keyPEM, nil
}

// renewReason says why an existing pair no longer serves spec ("" if it does).
func (ca *CA) renewReason(certPEM, keyPEM []byte, spec leafSpec) string {
	cert, _, err := parsePair(certPEM, keyPEM)
	if err != nil {
		return err.Error()
	}
	if err := cert.CheckSignatureFrom(ca.CACert); err != nil {
		return "not signed by the current CA"
	}
	if ca.now().Add(RenewBefore).After(cert.NotAfter) {
		return "expires within 30 days"
	}
	for _, usage := range spec.usages {
		if !slices.Contains(cert.ExtKeyUsage, usage) {
			return "missing extended key usage"
		}
	}
	if cert.Subject.CommonName != spec.cn || !sameSet(cert.Subject.Organization, spec.orgs) {
		return "subject changed"
	}
	for _, name := range spec.dnsNames {
		if !slices.Contains(cert.DNSNames, name) {
			return "lacks SAN " + name
		}
	}
	for _, ip := range spec.ips {
		if !slices.ContainsFunc(cert.IPAddresses, ip.Equal) {
			return "lacks SAN " + ip.String()
		}
	}
	return ""
}

func (ca *CA) issue(spec leafSpec, validity time.Duration) (certPEM, keyPEM []byte, err error) {
	key, err := newKey()
	if err != nil {
		return nil, nil, err
	}
	der, err := ca.sign(&x509.Certificate{
		Subject:     pkix.Name{CommonName: spec.cn, Organization: spec.orgs},
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage: spec.usages,
		DNSNames:    spec.dnsNames,
		IPAddresses: spec.ips,
	}, key.Public(), validity)
	if err != nil {
		return nil, nil, err
	}
	return encode(der, key)
}
