package flow

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/nodeagent/nodeagent/pkg/controlplane/pki"
	"github.com/nodeagent/nodeagent/test/framework"
)

// waitServingCertIssued waits until the agent serves the certificate it
// requested from the cluster (serverTLSBootstrap): one the cluster CA
// signed for the node's name, which the API server verifies. Until then
// it serves a self-signed one.
func waitServingCertIssued(t *testing.T, a *framework.Agent, node string) {
	t.Helper()
	caPEM, err := os.ReadFile(filepath.Join(dataDir, "pki", pki.CACertFile))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	addr := fmt.Sprintf("127.0.0.1:%d", a.SecurePort)
	waitFor(t, apiTimeout, "the agent to serve a certificate the cluster CA signed", func() (bool, error) {
		conn, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true})
		if err != nil {
			return false, err
		}
		defer conn.Close()
		certs := conn.ConnectionState().PeerCertificates
		if len(certs) == 0 {
			return false, errors.New("no certificate")
		}
		_, err = certs[0].Verify(x509.VerifyOptions{Roots: pool, DNSName: node, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
		return err == nil, err
	})
}

// The agent's serving certificate comes from the cluster: a
// kubelet-serving request, approved and signed by the control plane,
// kept in <root-dir>/pki as the kubelet keeps it.
func TestServingCertificateFromCluster(t *testing.T) {
	a := newAgent(t)
	waitServingCertIssued(t, a, nodeName)
	out := mustKubectl(t, "get", "csr", "--field-selector=spec.signerName=kubernetes.io/kubelet-serving", "-o",
		"jsonpath={range .items[*]}{.spec.username}{\" \"}{.status.conditions[0].type}{\"\\n\"}{end}")
	if want := "system:node:" + nodeName + " Approved"; !slices.Contains(strings.Split(out, "\n"), want) {
		t.Errorf("kubectl get csr: %q, want a line %q", out, want)
	}
	pair := filepath.Join(a.RootDir, "pki", "kubelet-server-current.pem")
	if _, err := tls.LoadX509KeyPair(pair, pair); err != nil {
		t.Errorf("issued pair not kept: %v", err)
	}
}
