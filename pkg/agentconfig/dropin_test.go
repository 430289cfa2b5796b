package agentconfig

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

// dropinDir writes files (name -> content) under a new directory.
func dropinDir(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, data := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestMergeDropins carries over upstream's TestMergeKubeletConfigurations
// cases (cmd/kubelet/app/server_test.go) and the merge rules of the
// kubelet's "Kubelet Configuration Directory Merging" page.
func TestMergeDropins(t *testing.T) {
	main := writeConfig(t, header+`port: 9090
syncFrequency: 5m
clusterDNS: [192.168.1.3, 192.168.1.4]
kubeReserved:
  memory: 100Mi
authorization:
  mode: Webhook
  webhook:
    cacheAuthorizedTTL: 5m
    cacheUnauthorizedTTL: 30s
address: 192.168.0.1
`)
	dir := dropinDir(t, map[string]string{
		"10-kubelet.conf": header + "port: 8080\nkubeReserved:\n  memory: 150Mi\n  cpu: 200m\nsystemReserved:\n  memory: 1Gi\n",
		"20-kubelet.conf": header + "readOnlyPort: 10257\nkubeReserved:\n  memory: 100Mi\nclusterDNS: [192.168.1.1, 192.168.1.5, 192.168.1.8]\n" +
			"authorization:\n  mode: AlwaysAllow\n  webhook:\n    cacheAuthorizedTTL: 8m\naddress: 192.168.0.8\n",
		// Read in WalkDir order: a subdirectory's files come where its name sorts.
		"15-sub/a.conf": header + "maxPods: 20\nsystemReserved:\n  memory: 2Gi\n",
		// Not *.conf: skipped.
		"30-kubelet.yaml": header + "maxPods: 999\n",
		"README":          "not a config",
	})
	c, warnings, err := LoadFiles(main, dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(warnings) != 0 {
		t.Errorf("warnings %q", warnings)
	}
	checks := []struct {
		what      string
		got, want any
	}{
		{"port: the later drop-in wins", *c.Port, int32(8080)},
		{"readOnlyPort: set by a drop-in only", *c.ReadOnlyPort, int32(10257)},
		{"syncFrequency: the main file's", c.SyncFrequency.Duration, 5 * time.Minute},
		{"kubeReserved: maps merge key by key", c.KubeReserved, map[string]string{"cpu": "200m", "memory": "100Mi"}},
		{"systemReserved: the subdirectory's drop-in after 10-", c.SystemReserved, map[string]string{"memory": "2Gi"}},
		{"clusterDNS: lists replace", c.ClusterDNS, []string{"192.168.1.1", "192.168.1.5", "192.168.1.8"}},
		{"authorization.mode: nested fields override", c.Authorization.Mode, AuthorizationModeAlwaysAllow},
		{"authorization.webhook.cacheAuthorizedTTL", c.Authorization.Webhook.CacheAuthorizedTTL.Duration, 8 * time.Minute},
		{"authorization.webhook.cacheUnauthorizedTTL: kept", c.Authorization.Webhook.CacheUnauthorizedTTL.Duration, 30 * time.Second},
		{"address", c.Address, "192.168.0.8"},
		{"maxPods: only *.conf files", c.MaxPods, int32(20)},
	}
	for _, ch := range checks {
		if !equal(ch.got, ch.want) {
			t.Errorf("%s: got %v, want %v", ch.what, ch.got, ch.want)
		}
	}
}

func equal(a, b any) bool {
	if am, ok := a.(map[string]string); ok {
		return maps.Equal(am, b.(map[string]string))
	}
	if as, ok := a.([]string); ok {
		return slices.Equal(as, b.([]string))
	}
	return a == b
}

func TestDropinsWithoutMainFile(t *testing.T) {
	dir := dropinDir(t, map[string]string{"10.conf": header + "maxPods: 30\n"})
	c, _, err := LoadFiles("", dir)
	if err != nil {
		t.Fatal(err)
	}
	want := Default()
	want.MaxPods = 30
	if c.MaxPods != 30 || c.ContainerRuntimeEndpoint != want.ContainerRuntimeEndpoint || *c.Port != *want.Port {
		t.Errorf("config = %+v, want the defaults with maxPods 30", c)
	}
}

// TestDropinsUnderFlags: explicit flags > drop-ins > --config > defaults.
func TestDropinsUnderFlags(t *testing.T) {
	main := writeConfig(t, header+"maxPods: 50\nstaticPodPath: /from/file\nclusterDNS: [10.0.0.1]\n")
	dir := dropinDir(t, map[string]string{"10.conf": header + "maxPods: 60\nstaticPodPath: /from/dropin\nfailSwapOn: false\n"})
	fs := pflag.NewFlagSet("nodeagent", pflag.ContinueOnError)
	c, _, warnings, err := Resolve(fs, []string{"--config", main, "--config-dir", dir, "--max-pods=70"})
	if err != nil {
		t.Fatal(err)
	}
	if c.MaxPods != 70 || c.StaticPodPath != "/from/dropin" || !slices.Equal(c.ClusterDNS, []string{"10.0.0.1"}) {
		t.Errorf("maxPods %d staticPodPath %q clusterDNS %v; want 70 (flag), /from/dropin, [10.0.0.1] (file)", c.MaxPods, c.StaticPodPath, c.ClusterDNS)
	}
	want := "drop-in config file " + filepath.Join(dir, "10.conf") + ": " + NotImplementedWarning("failSwapOn")
	if !slices.Equal(warnings, []string{want}) {
		t.Errorf("warnings %q, want %q", warnings, want)
	}
}

func TestDropinErrors(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		want  []string
	}{
		{"another kind", map[string]string{"10.conf": "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeProxyConfiguration\n"},
			[]string{"failed to merge kubelet configs: failed to walk through kubelet dropin directory", "failed to load kubelet dropin file, path: ", "10.conf", `unsupported kind "KubeProxyConfiguration"`}},
		{"no apiVersion", map[string]string{"10.conf": "maxPods: 10\n"},
			[]string{"10.conf", `unsupported apiVersion ""`}},
		{"empty", map[string]string{"10.conf": ""},
			[]string{"10.conf", "empty configuration"}},
		{"wrong type", map[string]string{"10.conf": header + "maxPods: lots\n"},
			[]string{"10.conf", `field "maxPods"`}},
		{"malformed", map[string]string{"10.conf": header + "maxPods: [\n"},
			[]string{"10.conf", "yaml"}},
		{"refused value", map[string]string{"10.conf": header + "enableDebuggingHandlers: false\n"},
			[]string{"10.conf", `field "enableDebuggingHandlers"`}},
		{"the first bad file stops the merge", map[string]string{"10.conf": header + "kind: Pod\n", "20.conf": header + "maxPods: x\n"},
			[]string{"10.conf"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := LoadFiles("", dropinDir(t, tt.files))
			if err == nil {
				t.Fatal("want error")
			}
			for _, want := range tt.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not contain %q", err, want)
				}
			}
		})
	}
	if _, _, err := LoadFiles("", filepath.Join(t.TempDir(), "missing")); err == nil ||
		!strings.Contains(err.Error(), "failed to walk through kubelet dropin directory") {
		t.Errorf("missing directory: err = %v", err)
	}
}

// TestDropinNull: a null in a drop-in removes the key (RFC 7386), so the
// field is back to its default.
func TestDropinNull(t *testing.T) {
	main := writeConfig(t, header+"maxPods: 50\n")
	c, _, err := LoadFiles(main, dropinDir(t, map[string]string{"10.conf": header + "maxPods: null\n"}))
	if err != nil {
		t.Fatal(err)
	}
	if c.MaxPods != DefaultMaxPods {
		t.Errorf("maxPods = %d, want the default %d", c.MaxPods, DefaultMaxPods)
	}
}
