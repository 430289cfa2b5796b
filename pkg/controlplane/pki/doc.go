// Package pki creates and keeps the control plane's certificates in one
// directory, the way kubeadm lays out /etc/kubernetes/pki:
//
//	ca.crt, ca.key               self-signed CA (ECDSA P-256, 10 years)
//	apiserver.crt, apiserver.key serving certificate (1 year)
//	admin.crt, admin.key         client certificate CN=kubernetes-admin, O=system:masters
//
// Ensure creates what is missing and reuses what is valid: the CA is never
// regenerated once it exists; leaf certificates are renewed when they
// expire within 30 days, are not signed by the CA, or (serving) lack a
// requested SAN. Keys are written 0600.
//
//	p, err := pki.Ensure("/var/lib/nodeagent/pki", pki.Options{ExtraSANs: []string{"api.example.com"}})
//	cert, err := p.ServingCertificate()   // for tls.Config.Certificates
//	pool := p.CertPool()                  // for tls.Config.ClientCAs
//	err = pki.WriteKubeconfig("admin.kubeconfig", "https://127.0.0.1:6443",
//		p.CAPEM, p.AdminCertPEM, p.AdminKeyPEM, "kubernetes-admin")
//
// IssueClientCert signs further client certificates, e.g. node
// credentials (CN "system:node:<name>", O "system:nodes").
package pki
