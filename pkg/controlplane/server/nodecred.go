package server

import (
	"fmt"
	"path/filepath"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/nodeagent/nodeagent/pkg/controlplane/pki"
)

// nodeCredentialValidity is how long a node's client certificate lasts
// (the kubelet's client certificates last a year too).
const nodeCredentialValidity = 365 * 24 * time.Hour

// WriteNodeKubeconfig mints a node credential (CN system:node:<node>,
// O system:nodes, which the node authorizer recognises) signed by the
// cluster CA in dataDir, and writes a kubeconfig with it for an agent
// joining from another host.
func WriteNodeKubeconfig(dataDir, node, serverURL, out string) error {
	if errs := validation.IsDNS1123Subdomain(node); len(errs) > 0 {
		return fmt.Errorf("node name %q: %v", node, errs)
	}
	p, err := pki.Ensure(filepath.Join(dataDir, "pki"), pki.Options{})
	if err != nil {
		return err
	}
	user := "system:node:" + node
	cert, key, err := p.IssueClientCert(user, []string{"system:nodes"}, nodeCredentialValidity)
	if err != nil {
		return fmt.Errorf("issue node certificate: %w", err)
	}
	return pki.WriteKubeconfig(out, serverURL, p.CAPEM, cert, key, user)
}
