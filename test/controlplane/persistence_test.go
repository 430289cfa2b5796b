package controlplane_test

import (
	"path/filepath"
	"testing"
)

// TestPersistence restarts its own server (same data dir, same ports) and
// finds the objects created before the restart.
func TestPersistence(t *testing.T) {
	cfg := newServerConfig(filepath.Join(t.TempDir(), "data"))
	s, err := startServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if s != nil {
			if err := s.stop(); err != nil {
				t.Errorf("stop: %v", err)
			}
		}
	}()
	kc := s.kubeconfig()
	run := func(args ...string) string {
		t.Helper()
		out, stderr, err := kubectlWith(t, kc, args...)
		if err != nil {
			t.Fatalf("kubectl %q: %v\n%s", args, err, stderr)
		}
		return out
	}
	run("create", "namespace", "keep")
	run("-n", "keep", "create", "configmap", "cfg", "--from-literal=answer=42")
	const query = "jsonpath={.metadata.uid} {.metadata.resourceVersion} {.data.answer}"
	before := run("-n", "keep", "get", "configmap", "cfg", "-o", query)

	err = s.stop()
	s = nil
	if err != nil {
		t.Fatalf("stop: %v", err)
	}
	if s, err = startServer(cfg); err != nil {
		t.Fatalf("restart on the same data dir: %v", err)
	}
	if after := run("-n", "keep", "get", "configmap", "cfg", "-o", query); after != before {
		t.Errorf("configmap after restart: %q, before: %q", after, before)
	}
	if out := run("get", "namespace", "keep", "-o", "jsonpath={.status.phase}"); out != "Active" {
		t.Errorf("namespace after restart: phase %q", out)
	}
}
