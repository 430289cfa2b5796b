// Package pki creates and keeps the control plane's certificates in one
// directory, the way kubeadm lays out /etc/kubernetes/pki:
//
//	ca.crt, ca.key                    cluster CA, self-signed (ECDSA P-256, 10 years)
//	apiserver.crt, apiserver.key      serving certificate (1 year)
//	admin.crt, admin.key              client certificate CN=kubernetes-admin, O=system:masters
//	apiserver-kubelet-client.crt/.key the API server's client certificate towards kubelets
//	kubelet-serving-ca.crt/.key       kubelet-serving CA, self-signed (10 years)
//
// and, for the embedded etcd only (EnsureEtcd):
//
//	etcd/ca.crt, etcd/ca.key            etcd CA, self-signed (10 years)
//	etcd/server.crt, etcd/peer.crt      etcd's client and peer ports (CN and SAN the host name, localhost, 127.0.0.1, ::1)
//	etcd/healthcheck-client.crt         CN=kube-etcd-healthcheck-client, for probes and etcdctl
//	apiserver-etcd-client.crt           CN=kube-apiserver-etcd-client, the API server's client of etcd
//
// etcd trusts only the etcd CA, so no certificate of the cluster CA
// (admin, nodes, approved CSRs) opens etcd.
//
// The cluster CA is what everyone trusts for the API server (kubeconfigs,
// kube-root-ca.crt) and for client certificates. The kubelet-serving CA
// signs only kubelets' serving certificates (kubernetes.io/kubelet-serving
// requests, which name what a node reports about itself) and only the API
// server trusts it, to verify kubelets: a node's serving certificate can
// never pass for the API server.
//
// Ensure creates what is missing and reuses what is valid: a CA is never
// regenerated once it exists; leaf certificates are renewed when they
// expire within 30 days, are not signed by the CA, or (serving) lack a
// requested SAN. Keys are written 0600.
//
//	p, err := pki.Ensure("/var/lib/nodeagent/pki", pki.Options{ExtraSANs: []string{"api.example.com"}})
//	cert, err := p.ServingCertificate()       // for tls.Config.Certificates
//	pool := p.CertPool()                      // for tls.Config.ClientCAs
//	kubelets := p.KubeletServingCA.CertPool() // to verify kubelets
//	err = pki.WriteKubeconfig("admin.kubeconfig", "https://127.0.0.1:6443",
//		p.CAPEM, p.AdminCertPEM, p.AdminKeyPEM, "kubernetes-admin")
//
// IssueClientCert signs further client certificates, e.g. node
// credentials (CN "system:node:<name>", O "system:nodes").
package pki
