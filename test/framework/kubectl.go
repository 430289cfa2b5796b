package framework

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// Kubectl runs a kubectl binary with one kubeconfig and HOME (its
// discovery cache), logging every command and its output.
type Kubectl struct {
	Bin, Kubeconfig, Home string
}

// Run runs kubectl with args.
func (k Kubectl) Run(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	// Not t.Context(): cleanups run after it ends.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, k.Bin, append([]string{"--kubeconfig", k.Kubeconfig}, args...)...)
	cmd.Env = []string{"HOME=" + k.Home, "PATH=" + os.Getenv("PATH")}
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err = cmd.Run()
	t.Logf("kubectl %s: err=%v\n%s%s", strings.Join(args, " "), err, o.String(), e.String())
	return o.String(), e.String(), err
}

// Must runs kubectl and fails the test if it fails.
func (k Kubectl) Must(t *testing.T, args ...string) string {
	t.Helper()
	out, stderr, err := k.Run(t, args...)
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, stderr)
	}
	return out
}

// WaitFor polls cond every 200ms until it holds; it fails the test after
// timeout with the last error.
func WaitFor(t *testing.T, timeout time.Duration, what string, cond func() (bool, error)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var last error
	for {
		ok, err := cond()
		if ok {
			return
		}
		if err != nil {
			last = err
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s: not done after %s (last error: %v)", what, timeout, last)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
