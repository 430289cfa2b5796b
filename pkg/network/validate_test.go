package network

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// systemPluginDir is where Debian's containernetworking-plugins (1.1.1)
// installs the reference plugins.
const systemPluginDir = "/usr/lib/cni"

// requirePlugins fails, rather than skips, without the plugins: the
// project's setup installs them, so their absence is a broken machine.
func requirePlugins(t *testing.T, names ...string) {
	t.Helper()
	for _, n := range names {
		if _, err := os.Stat(filepath.Join(systemPluginDir, n)); err != nil {
			t.Fatalf("CNI plugin %s missing in %s (run hack/setup.sh, which installs containernetworking-plugins): %v", n, systemPluginDir, err)
		}
	}
}

func renderForTest(t *testing.T, c CNIConfig) []byte {
	t.Helper()
	out, err := RenderConflist(c)
	if err != nil {
		t.Fatalf("RenderConflist: %v", err)
	}
	return out
}

func TestValidateSystemPlugins(t *testing.T) {
	requirePlugins(t, "bridge", "host-local", "portmap", "loopback")
	conf := renderForTest(t, CNIConfig{NetworkName: "nodeagent", PodCIDRs: []string{"10.244.1.0/24", "fd00:1::/64"},
		IPMasq: true, HairpinMode: true, Loopback: true})
	if err := Validate(context.Background(), conf, []string{t.TempDir(), systemPluginDir}); err != nil {
		t.Fatalf("Validate against %s: %v", systemPluginDir, err)
	}
}

func TestValidateNamesMissingPlugins(t *testing.T) {
	empty := t.TempDir()
	conf := renderForTest(t, CNIConfig{NetworkName: "nodeagent", PodCIDRs: []string{"10.244.1.0/24"}})
	err := Validate(context.Background(), conf, []string{empty})
	if err == nil {
		t.Fatal("Validate against an empty plugin directory: want an error")
	}
	// Every missing plugin is named, the IPAM plugin included.
	for _, want := range []string{`"bridge"`, `"host-local"`, `"portmap"`, empty, `network "nodeagent"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %s", err, want)
		}
	}
}

func TestValidateUnsupportedVersion(t *testing.T) {
	requirePlugins(t, "bridge")
	// 9.9.9 stands for a spec newer than the installed plugins know.
	conf := []byte(`{"cniVersion": "9.9.9", "name": "n", "plugins": [{"type": "bridge"}]}`)
	err := Validate(context.Background(), conf, []string{systemPluginDir})
	if err == nil || !strings.Contains(err.Error(), `plugin bridge does not support config version "9.9.9"`) {
		t.Fatalf("Validate = %v; want bridge's unsupported version named", err)
	}
}

func TestValidateBadInput(t *testing.T) {
	tests := []struct {
		name, conf, wantErr string
		binDirs             []string
	}{
		{"no bin dirs", `{"cniVersion":"1.0.0","name":"n","plugins":[{"type":"bridge"}]}`, "no plugin directories", nil},
		{"not JSON", `{`, "validate CNI config", []string{"/nonexistent"}},
		{"no version", `{"name":"n","plugins":[{"type":"bridge"}]}`, "no cniVersion", []string{"/nonexistent"}},
		{"no plugins", `{"cniVersion":"1.0.0","name":"n"}`, "no plugins", []string{"/nonexistent"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Validate(context.Background(), []byte(tt.conf), tt.binDirs)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Validate = %v; want an error with %q", err, tt.wantErr)
			}
		})
	}
}
