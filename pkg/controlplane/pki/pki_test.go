package pki

import (
	"crypto"
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

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

var testOpts = Options{Hostname: "node-a", IPs: []net.IP{net.ParseIP("192.0.2.10")}}

func readCert(t *testing.T, path string) *x509.Certificate {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(data)
	if block == nil {
		t.Fatalf("%s: no PEM", path)
	}
	c, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestEnsureReuses(t *testing.T) {
	dir := t.TempDir()
	p1, err := Ensure(dir, testOpts)
	if err != nil {
		t.Fatal(err)
	}
	serving1 := readCert(t, p1.ServingCertPath)
	p2, err := Ensure(dir, testOpts)
	if err != nil {
		t.Fatal(err)
	}
	if p1.CACert.SerialNumber.Cmp(p2.CACert.SerialNumber) != 0 {
		t.Error("CA regenerated")
	}
	if readCert(t, p2.ServingCertPath).SerialNumber.Cmp(serving1.SerialNumber) != 0 {
		t.Error("serving certificate regenerated")
	}
	if string(p1.AdminCertPEM) != string(p2.AdminCertPEM) {
		t.Error("admin certificate regenerated")
	}
	for _, f := range []string{CAKeyFile, ServingKeyFile, AdminKeyFile} {
		st, err := os.Stat(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != 0o600 {
			t.Errorf("%s mode %v, want 0600", f, st.Mode().Perm())
		}
	}
}

func TestServingSANs(t *testing.T) {
	p, err := Ensure(t.TempDir(), Options{
		Hostname: "node-a", IPs: []net.IP{net.ParseIP("192.0.2.10")},
		ExtraSANs: []string{"api.example.com", "198.51.100.7"},
	})
	if err != nil {
		t.Fatal(err)
	}
	c := readCert(t, p.ServingCertPath)
	for _, name := range []string{"localhost", "node-a", "kubernetes", "kubernetes.default",
		"kubernetes.default.svc", "kubernetes.default.svc.cluster.local", "api.example.com"} {
		if !slices.Contains(c.DNSNames, name) {
			t.Errorf("missing DNS SAN %s in %v", name, c.DNSNames)
		}
		if err := c.VerifyHostname(name); err != nil {
			t.Errorf("VerifyHostname(%s): %v", name, err)
		}
	}
	for _, ip := range []string{"127.0.0.1", "192.0.2.10", "198.51.100.7"} {
		if err := c.VerifyHostname(ip); err != nil {
			t.Errorf("VerifyHostname(%s): %v", ip, err)
		}
	}
	if _, err := c.Verify(x509.VerifyOptions{Roots: p.CertPool(), DNSName: "kubernetes.default.svc",
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
		t.Errorf("serving cert does not verify: %v", err)
	}
	if d := c.NotAfter.Sub(c.NotBefore); d < 364*24*time.Hour || d > 366*24*time.Hour {
		t.Errorf("serving validity %v, want ~1 year", d)
	}
	if d := p.CACert.NotAfter.Sub(p.CACert.NotBefore); d < 10*364*24*time.Hour {
		t.Errorf("CA validity %v, want ~10 years", d)
	}
}

func TestRenewal(t *testing.T) {
	dir := t.TempDir()
	p1, err := Ensure(dir, testOpts)
	if err != nil {
		t.Fatal(err)
	}
	serial := readCert(t, p1.ServingCertPath).SerialNumber

	// A new SAN renews the serving certificate but keeps the CA.
	withSAN := testOpts
	withSAN.ExtraSANs = []string{"new.example.com"}
	p2, err := Ensure(dir, withSAN)
	if err != nil {
		t.Fatal(err)
	}
	c := readCert(t, p2.ServingCertPath)
	if c.SerialNumber.Cmp(serial) == 0 || !slices.Contains(c.DNSNames, "new.example.com") {
		t.Fatal("serving certificate not renewed for a new SAN")
	}
	if p2.CACert.SerialNumber.Cmp(p1.CACert.SerialNumber) != 0 {
		t.Fatal("CA regenerated")
	}
	serial = c.SerialNumber
	adminPEM := string(p2.AdminCertPEM)

	// 340 days later both leaves expire within 30 days and are renewed.
	later := withSAN
	later.Now = func() time.Time { return time.Now().Add(340 * 24 * time.Hour) }
	p3, err := Ensure(dir, later)
	if err != nil {
		t.Fatal(err)
	}
	if readCert(t, p3.ServingCertPath).SerialNumber.Cmp(serial) == 0 {
		t.Error("expiring serving certificate not renewed")
	}
	if string(p3.AdminCertPEM) == adminPEM {
		t.Error("expiring admin certificate not renewed")
	}
	if p3.CACert.SerialNumber.Cmp(p1.CACert.SerialNumber) != 0 {
		t.Fatal("CA regenerated")
	}
}

func TestCorruptCAIsAnError(t *testing.T) {
	dir := t.TempDir()
	if _, err := Ensure(dir, testOpts); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, CAKeyFile)); err != nil {
		t.Fatal(err)
	}
	if _, err := Ensure(dir, testOpts); err == nil {
		t.Fatal("a CA certificate without its key must not be replaced silently")
	}
}

func TestAdminAndClientCerts(t *testing.T) {
	p, err := Ensure(t.TempDir(), testOpts)
	if err != nil {
		t.Fatal(err)
	}
	verify := func(certPEM []byte, cn, org string) {
		t.Helper()
		block, _ := pem.Decode(certPEM)
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		if c.Subject.CommonName != cn || !slices.Equal(c.Subject.Organization, []string{org}) {
			t.Errorf("subject %v, want CN=%s O=%s", c.Subject, cn, org)
		}
		if _, err := c.Verify(x509.VerifyOptions{Roots: p.CertPool(),
			KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
			t.Errorf("%s: does not verify for client auth: %v", cn, err)
		}
		if _, err := c.Verify(x509.VerifyOptions{Roots: p.CertPool(),
			KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err == nil {
			t.Errorf("%s: a client certificate must not serve", cn)
		}
	}
	verify(p.AdminCertPEM, "kubernetes-admin", "system:masters")

	certPEM, keyPEM, err := p.IssueClientCert("system:node:node-a", []string{"system:nodes"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	verify(certPEM, "system:node:node-a", "system:nodes")
	if _, _, err := parsePair(certPEM, keyPEM); err != nil {
		t.Fatal(err)
	}
}

func TestWriteKubeconfig(t *testing.T) {
	dir := t.TempDir()
	p, err := Ensure(filepath.Join(dir, "pki"), testOpts)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "admin.kubeconfig")
	if err := WriteKubeconfig(path, "https://127.0.0.1:6443", p.CAPEM, p.AdminCertPEM, p.AdminKeyPEM, AdminUser); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("kubeconfig mode %v, want 0600", st.Mode().Perm())
	}
	cfg, err := clientcmd.LoadFromFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.CurrentContext == "" || cfg.Contexts[cfg.CurrentContext].AuthInfo != AdminUser {
		t.Errorf("current context %q: %+v", cfg.CurrentContext, cfg.Contexts)
	}
	rc, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatal(err)
	}
	if rc.Host != "https://127.0.0.1:6443" || string(rc.CAData) != string(p.CAPEM) ||
		string(rc.CertData) != string(p.AdminCertPEM) || string(rc.KeyData) != string(p.AdminKeyPEM) {
		t.Errorf("rest.Config does not carry the credentials: host %s", rc.Host)
	}
	if _, err := rest.TLSConfigFor(rc); err != nil {
		t.Errorf("TLS config from kubeconfig: %v", err)
	}
}

// The kubelet-serving CA is a CA of its own, kept across restarts: what it
// signs does not verify against the cluster CA, and the other way round.
func TestKubeletServingCA(t *testing.T) {
	dir := t.TempDir()
	p, err := Ensure(dir, testOpts)
	if err != nil {
		t.Fatal(err)
	}
	ca := p.KubeletServingCA
	if !ca.CACert.IsCA || ca.CACert.Subject.CommonName != "nodeagent-kubelet-serving-ca" {
		t.Fatalf("kubelet-serving CA: IsCA %v subject %v", ca.CACert.IsCA, ca.CACert.Subject)
	}
	if ca.CACert.Equal(p.CACert) || ca.CACert.PublicKey.(interface{ Equal(crypto.PublicKey) bool }).Equal(p.CACert.PublicKey) {
		t.Fatal("kubelet-serving CA is the cluster CA")
	}
	onDisk, err := os.ReadFile(filepath.Join(dir, KubeletServingCACertFile))
	if err != nil || string(onDisk) != string(ca.CAPEM) {
		t.Errorf("%s: %v", KubeletServingCACertFile, err)
	}
	if st, err := os.Stat(filepath.Join(dir, KubeletServingCAKeyFile)); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("%s: %v %v", KubeletServingCAKeyFile, st, err)
	}

	key, err := newKey()
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{
		Subject: pkix.Name{CommonName: "system:node:n1"}, DNSNames: []string{"n1"},
	}, key)
	if err != nil {
		t.Fatal(err)
	}
	req, err := x509.ParseCertificateRequest(der)
	if err != nil {
		t.Fatal(err)
	}
	certPEM, err := ca.SignRequest(req, x509.KeyUsageDigitalSignature, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(certPEM)
	c, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	opts := x509.VerifyOptions{DNSName: "n1", KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	opts.Roots = ca.CertPool()
	if _, err := c.Verify(opts); err != nil {
		t.Errorf("does not verify against the kubelet-serving CA: %v", err)
	}
	opts.Roots = p.CertPool()
	if _, err := c.Verify(opts); err == nil {
		t.Error("a kubelet serving certificate verifies against the cluster CA")
	}
	opts = x509.VerifyOptions{Roots: ca.CertPool(), DNSName: "kubernetes.default.svc", KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	if _, err := readCert(t, p.ServingCertPath).Verify(opts); err == nil {
		t.Error("the API server's certificate verifies against the kubelet-serving CA")
	}

	again, err := Ensure(dir, testOpts)
	if err != nil {
		t.Fatal(err)
	}
	if !again.KubeletServingCA.CACert.Equal(ca.CACert) {
		t.Error("kubelet-serving CA regenerated")
	}
	if err := os.Remove(filepath.Join(dir, KubeletServingCAKeyFile)); err != nil {
		t.Fatal(err)
	}
	if _, err := Ensure(dir, testOpts); err == nil || !strings.Contains(err.Error(), "kubelet-serving CA") {
		t.Errorf("kubelet-serving CA without its key: err = %v, want an error naming it", err)
	}
}
