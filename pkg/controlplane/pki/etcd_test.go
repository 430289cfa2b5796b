package pki

import (
	"crypto/x509"
	"net"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestEnsureEtcdLayout(t *testing.T) {
	dir := t.TempDir()
	cluster, err := Ensure(dir, testOpts)
	if err != nil {
		t.Fatal(err)
	}
	p, err := EnsureEtcd(dir, testOpts)
	if err != nil {
		t.Fatal(err)
	}
	ca := readCert(t, filepath.Join(dir, EtcdCACertFile))
	if !ca.IsCA || ca.Subject.CommonName != "etcd-ca" {
		t.Errorf("etcd CA: IsCA %v CN %q", ca.IsCA, ca.Subject.CommonName)
	}
	if ca.Equal(cluster.CACert) {
		t.Fatal("etcd CA is the cluster CA")
	}
	both := []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
	client := []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	for _, tc := range []struct {
		path   string
		cn     string
		orgs   []string
		usages []x509.ExtKeyUsage
		sans   bool
	}{
		{p.ServerCertFile, "node-a", nil, both, true},
		{p.PeerCertFile, "node-a", nil, both, true},
		{p.HealthcheckCertFile, "kube-etcd-healthcheck-client", []string{"system:masters"}, client, false},
		{p.ClientCertFile, "kube-apiserver-etcd-client", []string{"system:masters"}, client, false},
	} {
		c := readCert(t, tc.path)
		if err := c.CheckSignatureFrom(ca); err != nil {
			t.Errorf("%s: not signed by the etcd CA: %v", tc.path, err)
		}
		if c.CheckSignatureFrom(cluster.CACert) == nil {
			t.Errorf("%s: signed by the cluster CA", tc.path)
		}
		if c.Subject.CommonName != tc.cn || !slices.Equal(c.Subject.Organization, tc.orgs) {
			t.Errorf("%s: subject %v, want CN %s O %v", tc.path, c.Subject, tc.cn, tc.orgs)
		}
		if !slices.Equal(c.ExtKeyUsage, tc.usages) {
			t.Errorf("%s: usages %v, want %v", tc.path, c.ExtKeyUsage, tc.usages)
		}
		if !tc.sans {
			continue
		}
		if !slices.Equal(c.DNSNames, []string{"localhost", "node-a"}) {
			t.Errorf("%s: DNS SANs %v", tc.path, c.DNSNames)
		}
		for _, ip := range []net.IP{net.ParseIP("127.0.0.1"), net.IPv6loopback} {
			if !slices.ContainsFunc(c.IPAddresses, ip.Equal) {
				t.Errorf("%s: lacks IP SAN %s", tc.path, ip)
			}
		}
		if slices.ContainsFunc(c.IPAddresses, net.ParseIP("192.0.2.10").Equal) {
			t.Errorf("%s: has the node address, but etcd listens on loopback only", tc.path)
		}
	}
	for _, key := range []string{EtcdCAKeyFile, EtcdServerKeyFile, EtcdPeerKeyFile, EtcdHealthcheckClientKeyFile, EtcdClientKeyFile} {
		fi, err := os.Stat(filepath.Join(dir, key))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s mode %v, want 0600", key, fi.Mode().Perm())
		}
	}
}

func TestEnsureEtcdReuses(t *testing.T) {
	dir := t.TempDir()
	p1, err := EnsureEtcd(dir, testOpts)
	if err != nil {
		t.Fatal(err)
	}
	before := map[string][]byte{}
	for _, f := range []string{p1.CAFile, p1.ServerCertFile, p1.PeerCertFile, p1.HealthcheckCertFile, p1.ClientCertFile} {
		before[f], _ = os.ReadFile(f)
	}
	p2, err := EnsureEtcd(dir, testOpts)
	if err != nil {
		t.Fatal(err)
	}
	if !p1.CA.CACert.Equal(p2.CA.CACert) {
		t.Error("etcd CA regenerated")
	}
	for f, data := range before {
		if now, _ := os.ReadFile(f); string(now) != string(data) {
			t.Errorf("%s rewritten on the second start", f)
		}
	}
}

// TestEnsureEtcdRenewsForNewHostname: a renamed host gets a serving
// certificate for its new name, from the same CA.
func TestEnsureEtcdRenewsForNewHostname(t *testing.T) {
	dir := t.TempDir()
	p1, err := EnsureEtcd(dir, testOpts)
	if err != nil {
		t.Fatal(err)
	}
	opts := testOpts
	opts.Hostname = "node-b"
	p2, err := EnsureEtcd(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	if !p1.CA.CACert.Equal(p2.CA.CACert) {
		t.Error("etcd CA regenerated")
	}
	if c := readCert(t, p2.ServerCertFile); !slices.Contains(c.DNSNames, "node-b") {
		t.Errorf("server certificate SANs %v lack node-b", c.DNSNames)
	}
}

// TestEnsureEtcdLoneKey: a CA key without its certificate is an error,
// never a silent new CA.
func TestEnsureEtcdLoneKey(t *testing.T) {
	dir := t.TempDir()
	if _, err := EnsureEtcd(dir, testOpts); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, EtcdCACertFile)); err != nil {
		t.Fatal(err)
	}
	if _, err := EnsureEtcd(dir, testOpts); err == nil {
		t.Fatal("EnsureEtcd with a lone CA key: want an error")
	}
}
