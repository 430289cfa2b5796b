package server

import (
	"crypto/x509"
	"encoding/pem"
	"path/filepath"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
)

func TestWriteNodeKubeconfig(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "node.kubeconfig")
	if err := WriteNodeKubeconfig(dir, "node-a", "https://10.0.0.1:6443", out); err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", out)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Host != "https://10.0.0.1:6443" || len(cfg.CAData) == 0 {
		t.Errorf("host %q, CA %d bytes", cfg.Host, len(cfg.CAData))
	}
	block, _ := pem.Decode(cfg.CertData)
	if block == nil {
		t.Fatal("no client certificate")
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if cert.Subject.CommonName != "system:node:node-a" || len(cert.Subject.Organization) != 1 || cert.Subject.Organization[0] != "system:nodes" {
		t.Errorf("subject %v", cert.Subject)
	}
	if err := WriteNodeKubeconfig(dir, "Bad_Name", "https://x", out); err == nil {
		t.Error("invalid node name accepted")
	}
}
