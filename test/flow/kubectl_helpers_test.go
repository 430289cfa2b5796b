package flow

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nodeagent/nodeagent/pkg/controlplane/server"
)

var (
	kubectlBin  string
	kubectlHome string // HOME for kubectl (its discovery cache)
)

// kubectl runs kubectl as the admin; it logs the command and its output.
func kubectl(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	// Not t.Context(): cleanups run after it ends.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	full := append([]string{"--kubeconfig", filepath.Join(dataDir, server.KubeconfigFile)}, args...)
	cmd := exec.CommandContext(ctx, kubectlBin, full...)
	cmd.Env = []string{"HOME=" + kubectlHome, "PATH=" + os.Getenv("PATH")}
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err = cmd.Run()
	t.Logf("kubectl %s: err=%v\n%s%s", strings.Join(args, " "), err, o.String(), e.String())
	return o.String(), e.String(), err
}

// mustKubectl runs kubectl and fails the test if it fails.
func mustKubectl(t *testing.T, args ...string) string {
	t.Helper()
	out, stderr, err := kubectl(t, args...)
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, stderr)
	}
	return out
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
