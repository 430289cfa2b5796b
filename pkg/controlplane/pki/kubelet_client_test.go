package pki

import (
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestKubeletClientCert(t *testing.T) {
	dir := t.TempDir()
	p, err := Ensure(dir, testOpts)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(p.KubeletClientCertPEM)
	if block == nil {
		t.Fatal("no kubelet client certificate")
	}
	c, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if c.Subject.CommonName != KubeletClientUser || !slices.Equal(c.Subject.Organization, []string{KubeletClientGroup}) {
		t.Errorf("subject %v, want CN=%s O=%s", c.Subject, KubeletClientUser, KubeletClientGroup)
	}
	if _, err := c.Verify(x509.VerifyOptions{Roots: p.CertPool(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("does not verify for client auth against the CA: %v", err)
	}
	if _, _, err := parsePair(p.KubeletClientCertPEM, p.KubeletClientKeyPEM); err != nil {
		t.Error(err)
	}
	onDisk, err := os.ReadFile(filepath.Join(dir, KubeletClientCertFile))
	if err != nil || string(onDisk) != string(p.KubeletClientCertPEM) {
		t.Errorf("%s: %v", KubeletClientCertFile, err)
	}
	if st, err := os.Stat(filepath.Join(dir, KubeletClientKeyFile)); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("%s: %v %v", KubeletClientKeyFile, st, err)
	}
	again, err := Ensure(dir, testOpts)
	if err != nil {
		t.Fatal(err)
	}
	if string(again.KubeletClientCertPEM) != string(p.KubeletClientCertPEM) {
		t.Error("kubelet client certificate regenerated")
	}
}
