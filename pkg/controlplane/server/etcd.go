package server

import (
	"fmt"
	"log/slog"
	"path/filepath"

	"github.com/nodeagent/nodeagent/pkg/controlplane/etcd"
	"github.com/nodeagent/nodeagent/pkg/controlplane/pki"
)

// etcdConfig is the storage configuration: an external cluster with the
// --etcd-* flags' TLS, or the embedded member secured as kubeadm secures
// its etcd (TLS on both ports, client certificates of the etcd CA, the
// API server connecting as apiserver-etcd-client).
func (c *Config) etcdConfig(log *slog.Logger) (etcd.Config, error) {
	ec := etcd.Config{
		DataDir:    filepath.Join(c.DataDir, "etcd"),
		ClientPort: c.EtcdClientPort,
		PeerPort:   c.EtcdPeerPort,
		Tuning:     c.EtcdTuning,
		Servers:    c.EtcdServers,
		CAFile:     c.EtcdCAFile,
		CertFile:   c.EtcdCertFile,
		KeyFile:    c.EtcdKeyFile,
		Logger:     log.With("component", "etcd"),
	}
	if len(c.EtcdServers) > 0 {
		return ec, nil
	}
	p, err := pki.EnsureEtcd(filepath.Join(c.DataDir, "pki"), pki.Options{Logger: log.With("component", "pki")})
	if err != nil {
		return etcd.Config{}, fmt.Errorf("etcd pki: %w", err)
	}
	return ec.WithPKI(p), nil
}
