package realcluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	certv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeagent/nodeagent/test/framework"
)

// TestServingCertificate: with serverTLSBootstrap the agent requests its
// serving certificate with a kubernetes.io/kubelet-serving CSR as the
// kubelet does; the real kube-controller-manager approves no such request
// (its csrapprover only approves kube-apiserver-client-kubelet ones), so
// the administrator approves it with kubectl, kube-controller-manager's
// signer issues it from the cluster CA, and the agent serves it.
func TestServingCertificate(t *testing.T) {
	// Every pending request of the node: an agent restarted before its
	// certificate was issued (TestNodeLifecycle) has requested again.
	var pending []string
	framework.WaitFor(t, apiTimeout, "the agent's kubelet-serving CSR", func() (bool, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		list, err := cl.admin.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		pending = pending[:0]
		for _, c := range list.Items {
			if c.Spec.SignerName == certv1.KubeletServingSignerName && c.Spec.Username == "system:node:"+nodeName && len(c.Status.Conditions) == 0 {
				pending = append(pending, c.Name)
			}
		}
		return len(pending) > 0, fmt.Errorf("%d CSRs, none pending kubelet-serving from the node", len(list.Items))
	})
	kctl.Must(t, append([]string{"certificate", "approve"}, pending...)...)
	for _, name := range pending {
		framework.WaitFor(t, apiTimeout, "kube-controller-manager to sign "+name, func() (bool, error) {
			out, stderr, err := kctl.Run(t, "get", "csr", name, "-o", "jsonpath={.status.certificate}")
			if err != nil {
				return false, fmt.Errorf("%v: %s", err, stderr)
			}
			return strings.TrimSpace(out) != "", errors.New("no certificate yet")
		})
	}

	caPEM, err := os.ReadFile(cl.pkiPath("ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(agent.SecurePort))
	framework.WaitFor(t, apiTimeout, "the agent to serve the issued certificate", func() (bool, error) {
		conn, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true})
		if err != nil {
			return false, err
		}
		defer conn.Close()
		certs := conn.ConnectionState().PeerCertificates
		if len(certs) == 0 {
			return false, errors.New("no certificate")
		}
		_, err = certs[0].Verify(x509.VerifyOptions{Roots: pool, DNSName: nodeName, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
		return err == nil, err
	})
}
