package agentconfig

import (
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite golden files")

func writeConfig(t *testing.T, data string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

const header = "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"

// load is Load of a file that must load without warnings.
func load(t *testing.T, path string) *Config {
	t.Helper()
	cfg, warnings, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(warnings) > 0 {
		t.Fatalf("%s: unexpected warnings %q", path, warnings)
	}
	return cfg
}

func TestGoldenRoundTrip(t *testing.T) {
	cfg := load(t, "testdata/kubelet-config.yaml")
	if _, err := cfg.Validate(); err != nil {
		t.Fatalf("example config is invalid: %v", err)
	}
	got, err := cfg.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	golden := "testdata/kubelet-config.golden.yaml"
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Errorf("marshal differs from %s (run with -update):\n%s", golden, got)
	}
	again := load(t, golden)
	if !reflect.DeepEqual(cfg, again) {
		t.Errorf("golden does not load back to the same config:\n%+v\n%+v", cfg, again)
	}
	if cfg.SyncFrequency.Duration != 30*time.Second || *cfg.ResolverConfig != "/run/systemd/resolve/resolv.conf" {
		t.Errorf("file values not loaded: %+v", cfg)
	}
}

func TestLoadDefaults(t *testing.T) {
	cfg := load(t, writeConfig(t, header))
	if !reflect.DeepEqual(cfg, Default()) {
		t.Errorf("minimal file = %+v, want defaults %+v", cfg, Default())
	}
	if _, err := cfg.Validate(); err != nil {
		t.Errorf("defaults are invalid: %v", err)
	}
}

func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name string
		data string
		want []string
	}{
		{"wrong type", header + "maxPods: many\n", []string{`field "maxPods"`}},
		{"wrong nested type", header + "authentication:\n  webhook:\n    enabled: yes please\n", []string{`field "authentication"`, "bool"}},
		{"bad duration", header + "syncFrequency: often\n", []string{`field "syncFrequency"`}},
		{"wrong apiVersion", "apiVersion: kubelet.config.k8s.io/v1\nkind: KubeletConfiguration\n", []string{`unsupported apiVersion "kubelet.config.k8s.io/v1"`}},
		{"wrong kind", "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: Pod\n", []string{`unsupported kind "Pod"`}},
		{"missing apiVersion", "kind: KubeletConfiguration\n", []string{`unsupported apiVersion ""`}},
		{"empty", "", []string{"empty configuration"}},
		{"not an object", "- a\n", []string{"not a configuration object"}},
		{"bad yaml", header + "maxPods: [\n", []string{"yaml"}},
		// KEP-2535: only the default policy (NeverVerifyPreloadedImages) is done; other policies are refused, not ignored.
		{"imagePullCredentialsVerificationPolicy refused", header + "imagePullCredentialsVerificationPolicy: AlwaysVerify\n",
			[]string{`field "imagePullCredentialsVerificationPolicy": "AlwaysVerify" is not supported by nodeagent (only "NeverVerifyPreloadedImages")`}},
		{"preloadedImagesVerificationAllowlist refused", header + "preloadedImagesVerificationAllowlist: [\"x\"]\n",
			[]string{`field "preloadedImagesVerificationAllowlist": ["x"] is not supported by nodeagent (only an empty list)`}},
		{"enableDebuggingHandlers false refused", header + "enableDebuggingHandlers: false\n",
			[]string{`field "enableDebuggingHandlers": false is not supported by nodeagent (only true)`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeConfig(t, tt.data)
			_, _, err := Load(path)
			if err == nil {
				t.Fatal("want error")
			}
			for _, want := range append(tt.want, path) {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not contain %q", err, want)
				}
			}
		})
	}
	if _, _, err := Load(filepath.Join(t.TempDir(), "missing.yaml")); err == nil {
		t.Error("missing file: want error")
	}
}

func TestLoadJSON(t *testing.T) {
	cfg := load(t, writeConfig(t, `{"apiVersion":"kubelet.config.k8s.io/v1beta1","kind":"KubeletConfiguration","readOnlyPort":0,"maxPods":7}`))
	if *cfg.ReadOnlyPort != 0 || cfg.MaxPods != 7 {
		t.Errorf("readOnlyPort=%d maxPods=%d, want 0 (explicitly disabled) and 7", *cfg.ReadOnlyPort, cfg.MaxPods)
	}
}
