package pki

import (
	"crypto/x509"
	"fmt"
	"net"
	"os"
	"path/filepath"
)

// The embedded etcd's certificates, laid out as kubeadm lays out
// /etc/kubernetes/pki/etcd. Paths are relative to the PKI directory.
const (
	EtcdCACertFile                = "etcd/ca.crt"
	EtcdCAKeyFile                 = "etcd/ca.key"
	EtcdServerCertFile            = "etcd/server.crt"
	EtcdServerKeyFile             = "etcd/server.key"
	EtcdPeerCertFile              = "etcd/peer.crt"
	EtcdPeerKeyFile               = "etcd/peer.key"
	EtcdHealthcheckClientCertFile = "etcd/healthcheck-client.crt"
	EtcdHealthcheckClientKeyFile  = "etcd/healthcheck-client.key"
	EtcdClientCertFile            = "apiserver-etcd-client.crt"
	EtcdClientKeyFile             = "apiserver-etcd-client.key"
	// kubeadm's common names and group for the two client certificates.
	EtcdHealthcheckClientUser = "kube-etcd-healthcheck-client"
	EtcdClientUser            = "kube-apiserver-etcd-client"
	etcdClientGroup           = "system:masters"
)

var etcdCA = caSpec{certFile: EtcdCACertFile, keyFile: EtcdCAKeyFile, commonName: "etcd-ca", what: "etcd CA"}

// EtcdPKI holds the paths of the embedded etcd's certificates. The etcd
// CA signs only these and etcd trusts only it, so no certificate of the
// cluster CA (admin, nodes, CSRs) opens etcd.
type EtcdPKI struct {
	CA CA
	// CAFile is the etcd CA: etcd's trusted CA for client and peer
	// certificates, and the clients' CA for etcd's serving certificate.
	CAFile string
	// ServerCertFile/ServerKeyFile serve the client port; PeerCertFile/
	// PeerKeyFile the peer port. Both carry server and client usages, as
	// etcd dials itself with them (its gRPC gateway, its peers).
	ServerCertFile, ServerKeyFile string
	PeerCertFile, PeerKeyFile     string
	// HealthcheckCertFile/HealthcheckKeyFile are for probes and etcdctl.
	HealthcheckCertFile, HealthcheckKeyFile string
	// ClientCertFile/ClientKeyFile are the API server's
	// (apiserver-etcd-client, kube-apiserver's --etcd-certfile/--etcd-keyfile).
	ClientCertFile, ClientKeyFile string
}

// EnsureEtcd loads the etcd CA and certificates in dir (the PKI
// directory), creating or renewing what is missing or no longer valid,
// as Ensure does for the rest. Only an embedded etcd needs them.
func EnsureEtcd(dir string, opts Options) (*EtcdPKI, error) {
	opts = opts.withDefaults()
	if err := os.MkdirAll(filepath.Join(dir, "etcd"), 0o700); err != nil {
		return nil, fmt.Errorf("pki dir: %w", err)
	}
	ca, err := ensureCA(dir, etcdCA, opts.Now, opts.Logger)
	if err != nil {
		return nil, err
	}
	hostname, err := opts.hostname()
	if err != nil {
		return nil, err
	}
	p := &EtcdPKI{CA: ca, CAFile: filepath.Join(dir, EtcdCACertFile)}
	// kubeadm: CN is the node name; SANs localhost, the node name and
	// loopback (the embedded member listens on loopback only).
	both := []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
	sans := []string{"localhost", hostname}
	ips := []net.IP{net.IPv4(127, 0, 0, 1).To4(), net.IPv6loopback}
	specs := []struct {
		spec              leafSpec
		certPath, keyPath *string
	}{
		{leafSpec{name: "etcd/server", cn: hostname, dnsNames: sans, ips: ips, usages: both}, &p.ServerCertFile, &p.ServerKeyFile},
		{leafSpec{name: "etcd/peer", cn: hostname, dnsNames: sans, ips: ips, usages: both}, &p.PeerCertFile, &p.PeerKeyFile},
		{clientLeaf("etcd/healthcheck-client", EtcdHealthcheckClientUser, etcdClientGroup), &p.HealthcheckCertFile, &p.HealthcheckKeyFile},
		{clientLeaf("apiserver-etcd-client", EtcdClientUser, etcdClientGroup), &p.ClientCertFile, &p.ClientKeyFile},
	}
	for _, s := range specs {
		if _, _, err := p.CA.ensureLeaf(dir, s.spec, opts.Logger); err != nil {
			return nil, err
		}
		*s.certPath, *s.keyPath = s.spec.paths(dir)
	}
	return p, nil
}
