package etcd

import "github.com/nodeagent/nodeagent/pkg/controlplane/pki"

// WithPKI returns cfg with the embedded server's TLS and its client's
// certificate (apiserver-etcd-client) taken from p.
func (cfg Config) WithPKI(p *pki.EtcdPKI) Config {
	cfg.ServerTLS = ServerTLS{
		TrustedCAFile: p.CAFile,
		CertFile:      p.ServerCertFile,
		KeyFile:       p.ServerKeyFile,
		PeerCertFile:  p.PeerCertFile,
		PeerKeyFile:   p.PeerKeyFile,
	}
	cfg.CAFile, cfg.CertFile, cfg.KeyFile = p.CAFile, p.ClientCertFile, p.ClientKeyFile
	return cfg
}
