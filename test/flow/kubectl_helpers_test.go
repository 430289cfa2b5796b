package flow

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/nodeagent/nodeagent/pkg/controlplane/server"
	"github.com/nodeagent/nodeagent/test/framework"
)

var (
	kubectlBin  string
	kubectlHome string // HOME for kubectl (its discovery cache)
)

// kubectl runs kubectl as the admin; it logs the command and its output.
func kubectl(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	return adminKubectl().Run(t, args...)
}

// mustKubectl runs kubectl and fails the test if it fails.
func mustKubectl(t *testing.T, args ...string) string {
	t.Helper()
	return adminKubectl().Must(t, args...)
}

func adminKubectl() framework.Kubectl {
	return framework.Kubectl{Bin: kubectlBin, Kubeconfig: filepath.Join(dataDir, server.KubeconfigFile), Home: kubectlHome}
}

// writeTemp writes content into the test's temp dir and returns the path.
func writeTemp(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
