package pki

import (
	"crypto"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"time"
)

// CA is a certificate authority of the PKI directory, loaded.
type CA struct {
	CACert *x509.Certificate
	CAKey  crypto.Signer
	CAPEM  []byte

	now func() time.Time
}

// caSpec says where a CA lives in the directory and what it is called.
type caSpec struct {
	certFile, keyFile string
	commonName        string
	what              string // for messages
}

// The directory's CAs.
var (
	clusterCA        = caSpec{certFile: CACertFile, keyFile: CAKeyFile, commonName: "nodeagent-ca", what: "cluster CA"}
	kubeletServingCA = caSpec{certFile: KubeletServingCACertFile, keyFile: KubeletServingCAKeyFile,
		commonName: "nodeagent-kubelet-serving-ca", what: "kubelet-serving CA"}
)

// CertPool returns a pool holding only the CA, for verifying the
// certificates it signed.
func (ca *CA) CertPool() *x509.CertPool {
	pool := x509.NewCertPool()
	pool.AddCert(ca.CACert)
	return pool
}

// SignRequest issues a certificate for a certificate signing request the
// caller has checked: the request's subject, names and public key with
// the given usages, valid for validity (bounded by the CA's own life).
func (ca *CA) SignRequest(req *x509.CertificateRequest, keyUsage x509.KeyUsage, extUsages []x509.ExtKeyUsage, validity time.Duration) ([]byte, error) {
	der, err := ca.sign(&x509.Certificate{
		Subject:        req.Subject,
		KeyUsage:       keyUsage,
		ExtKeyUsage:    extUsages,
		DNSNames:       req.DNSNames,
		IPAddresses:    req.IPAddresses,
		EmailAddresses: req.EmailAddresses,
		URIs:           req.URIs,
	}, req.PublicKey, validity)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), nil
}

// sign completes tmpl (serial, validity from now, bounded by the CA's own
// life) and signs pub into it with the CA.
func (ca *CA) sign(tmpl *x509.Certificate, pub any, validity time.Duration) ([]byte, error) {
	serial, err := newSerial()
	if err != nil {
		return nil, err
	}
	now := ca.now()
	tmpl.SerialNumber = serial
	tmpl.NotBefore = now.Add(-notBeforeSkew)
	tmpl.NotAfter = now.Add(validity)
	if tmpl.NotAfter.After(ca.CACert.NotAfter) {
		tmpl.NotAfter = ca.CACert.NotAfter
	}
	tmpl.BasicConstraintsValid = true
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.CACert, pub, ca.CAKey)
	if err != nil {
		return nil, fmt.Errorf("issue certificate %q: %w", tmpl.Subject.CommonName, err)
	}
	return der, nil
}

// ensureCA loads the CA spec names in dir, creating it when neither of its
// files exists. It is never regenerated once it exists.
func ensureCA(dir string, spec caSpec, now func() time.Time, log *slog.Logger) (CA, error) {
	certPath, keyPath := filepath.Join(dir, spec.certFile), filepath.Join(dir, spec.keyFile)
	certPEM, certErr := os.ReadFile(certPath)
	keyPEM, keyErr := os.ReadFile(keyPath)
	switch {
	case errors.Is(certErr, fs.ErrNotExist) && errors.Is(keyErr, fs.ErrNotExist):
		return createCA(dir, spec, now, log)
	case certErr != nil:
		return CA{}, fmt.Errorf("read %s certificate: %w", spec.what, certErr)
	case keyErr != nil:
		return CA{}, fmt.Errorf("read %s key: %w", spec.what, keyErr)
	}
	cert, key, err := parsePair(certPEM, keyPEM)
	if err != nil {
		return CA{}, fmt.Errorf("%s in %s: %w (remove %s and %s to create a new CA; every certificate it issued becomes invalid)",
			spec.what, dir, err, spec.certFile, spec.keyFile)
	}
	if !cert.IsCA {
		return CA{}, fmt.Errorf("%s in %s: %s is not a CA certificate", spec.what, dir, spec.certFile)
	}
	if now().After(cert.NotAfter) {
		return CA{}, fmt.Errorf("%s in %s expired on %s (remove %s and %s to create a new CA)",
			spec.what, dir, cert.NotAfter.Format(time.RFC3339), spec.certFile, spec.keyFile)
	}
	return CA{CACert: cert, CAKey: key, CAPEM: certPEM, now: now}, nil
}

func createCA(dir string, spec caSpec, now func() time.Time, log *slog.Logger) (CA, error) {
	key, err := newKey()
	if err != nil {
		return CA{}, err
	}
	serial, err := newSerial()
	if err != nil {
		return CA{}, err
	}
	t := now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: spec.commonName},
		NotBefore:             t.Add(-notBeforeSkew),
		NotAfter:              t.Add(CAValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return CA{}, fmt.Errorf("create %s: %w", spec.what, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return CA{}, err
	}
	certPEM, keyPEM, err := encode(der, key)
	if err != nil {
		return CA{}, err
	}
	// Key first: a lone key is an error on the next start, never a silent
	// new CA over an old certificate.
	if err := writeFile(filepath.Join(dir, spec.keyFile), keyPEM, 0o600); err != nil {
		return CA{}, err
	}
	if err := writeFile(filepath.Join(dir, spec.certFile), certPEM, 0o644); err != nil {
		return CA{}, err
	}
	log.Info("created "+spec.what, "dir", dir, "notAfter", cert.NotAfter)
	return CA{CACert: cert, CAKey: key, CAPEM: certPEM, now: now}, nil
}
