package agentconfig

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/nodeagent/nodeagent/pkg/imagegc"
)

func resolve(t *testing.T, args ...string) (*Config, *Flags) {
	t.Helper()
	fs := pflag.NewFlagSet("nodeagent", pflag.ContinueOnError)
	cfg, fl, _, err := Resolve(fs, args)
	if err != nil {
		t.Fatalf("Resolve(%q): %v", args, err)
	}
	return cfg, fl
}

func TestResolvePrecedence(t *testing.T) {
	file := writeConfig(t, header+`staticPodPath: /from/file
maxPods: 50
readOnlyPort: 0
syncFrequency: 30s
clusterDNS: [10.0.0.1, 10.0.0.2]
resolvConf: /file/resolv.conf
`)
	tests := []struct {
		name  string
		args  []string
		check func(*Config) []any // pairs of got, want
	}{
		{"defaults when neither", nil, func(c *Config) []any {
			return []any{c.StaticPodPath, "", c.MaxPods, int32(110), c.ReadOnlyPort, (*int32)(nil), c.SyncFrequency.Duration, time.Minute,
				*c.Port, int32(10250), *c.Authentication.Anonymous.Enabled, false, c.Authorization.Mode, AuthorizationModeWebhook}
		}},
		{"flag over default", []string{"--max-pods=20", "--read-only-port", "0"}, func(c *Config) []any {
			return []any{c.MaxPods, int32(20), *c.ReadOnlyPort, int32(0), c.StaticPodPath, ""}
		}},
		{"file kept without flags", []string{"--config", file}, func(c *Config) []any {
			return []any{c.StaticPodPath, "/from/file", c.MaxPods, int32(50), *c.ReadOnlyPort, int32(0),
				c.SyncFrequency.Duration, 30 * time.Second, strings.Join(c.ClusterDNS, ","), "10.0.0.1,10.0.0.2",
				*c.ResolverConfig, "/file/resolv.conf", c.Address, "0.0.0.0"}
		}},
		{"explicit flags override file", []string{
			"--max-pods=60", "--config=" + file, "--pod-manifest-path=/from/flag", "--read-only-port=10266",
			"--sync-frequency=5s", "--cluster-dns=10.9.9.9", "--resolv-conf=",
		}, func(c *Config) []any {
			return []any{c.StaticPodPath, "/from/flag", c.MaxPods, int32(60), *c.ReadOnlyPort, int32(10266),
				c.SyncFrequency.Duration, 5 * time.Second, strings.Join(c.ClusterDNS, ","), "10.9.9.9",
				*c.ResolverConfig, "", c.FileCheckFrequency.Duration, 20 * time.Second}
		}},
		{"server flags", []string{
			"--port=11250", "--tls-cert-file=/c.crt", "--tls-private-key-file=/c.key", "--client-ca-file=/ca.crt",
			"--anonymous-auth", "--authentication-token-webhook=false", "--authorization-mode=AlwaysAllow",
		}, func(c *Config) []any {
			return []any{*c.Port, int32(11250), c.TLSCertFile, "/c.crt", c.TLSPrivateKeyFile, "/c.key",
				c.Authentication.X509.ClientCAFile, "/ca.crt", *c.Authentication.Anonymous.Enabled, true,
				*c.Authentication.Webhook.Enabled, false, c.Authorization.Mode, AuthorizationModeAlwaysAllow}
		}},
		{"unsafe sysctls flag", []string{"--allowed-unsafe-sysctls=net.core.*,kernel.msgmax"}, func(c *Config) []any {
			return []any{strings.Join(c.AllowedUnsafeSysctls, ","), "net.core.*,kernel.msgmax"}
		}},
		{"seccomp default flag", []string{"--seccomp-default"}, func(c *Config) []any {
			return []any{*c.SeccompDefault, true}
		}},
		{"rotate-server-certificates", []string{"--rotate-server-certificates"}, func(c *Config) []any {
			return []any{*c.ServerTLSBootstrap, true}
		}},
		{"rotate-server-certificates over file", []string{"--config=" + file, "--rotate-server-certificates=false"}, func(c *Config) []any {
			return []any{*c.ServerTLSBootstrap, false, c.MaxPods, int32(50)}
		}},
		{"serverTLSBootstrap unset without flag or file", nil, func(c *Config) []any {
			return []any{c.ServerTLSBootstrap, (*bool)(nil)}
		}},
		{"server flags over file", []string{"--config=" + file, "--anonymous-auth=true", "--read-only-port=10255"}, func(c *Config) []any {
			return []any{*c.Authentication.Anonymous.Enabled, true, *c.ReadOnlyPort, int32(10255), c.Authentication.Webhook.CacheTTL.Duration, 2 * time.Minute}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, _ := resolve(t, tt.args...)
			pairs := tt.check(cfg)
			for i := 0; i < len(pairs); i += 2 {
				if !reflect.DeepEqual(pairs[i], pairs[i+1]) {
					t.Errorf("value %d = %v, want %v", i/2, pairs[i], pairs[i+1])
				}
			}
		})
	}
}

func TestResolveFlagOnlySettings(t *testing.T) {
	_, fl := resolve(t)
	if len(fl.NodeLabels) == 0 {
		fl.NodeLabels = nil
	}
	if !reflect.DeepEqual(*fl, *DefaultFlags()) {
		t.Errorf("default flags = %+v", fl)
	}
	_, fl = resolve(t, "--root-dir=/r", "--hostname-override=n1", "--node-ip=10.1.1.1", "--kubeconfig=/k", "--node-labels=zone=a,tier=web",
		"--network-plugin=kubenet", "--cni-conf-dir=/c", "--cni-bin-dir=/b1,/b2", "--network-plugin-mtu=1400", "--image-gc-period=2s")
	want := Flags{RootDir: "/r", HostnameOverride: "n1", NodeIP: "10.1.1.1", Kubeconfig: "/k",
		NodeLabels:    map[string]string{"zone": "a", "tier": "web"},
		NetworkPlugin: "kubenet", CNIConfDir: "/c", CNIBinDirs: []string{"/b1", "/b2"}, NetworkPluginMTU: 1400,
		ImageGCPeriod: 2 * time.Second}
	if !reflect.DeepEqual(*fl, want) {
		t.Errorf("flags = %+v, want %+v", *fl, want)
	}
	if err := fl.Validate(); err != nil {
		t.Error(err)
	}
	if err := (&Flags{RootDir: "/r", NodeIP: "bad"}).Validate(); err == nil || !strings.Contains(err.Error(), "--node-ip") {
		t.Errorf("bad node IP: err = %v", err)
	}
	if err := (&Flags{RootDir: "/r", NetworkPlugin: "cni"}).Validate(); err == nil || !strings.Contains(err.Error(), `--network-plugin: "cni" is not supported`) {
		t.Errorf("unknown network plugin: err = %v", err)
	}
	for _, period := range []time.Duration{0, -time.Minute} {
		_, fl = resolve(t, "--image-gc-period="+period.String())
		if err := fl.Validate(); err == nil || err.Error() != "--image-gc-period: must be greater than 0, got "+period.String() {
			t.Errorf("--image-gc-period=%s: err = %v", period, err)
		}
	}
}

// TestImageGCPeriodFlag: the kubelet's period by default, and hidden from
// --help (the kubelet has no such flag).
func TestImageGCPeriodFlag(t *testing.T) {
	if DefaultFlags().ImageGCPeriod != imagegc.Period {
		t.Errorf("default image GC period %s, want the kubelet's %s", DefaultFlags().ImageGCPeriod, imagegc.Period)
	}
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	(&Flags{}).AddFlags(fs)
	f := fs.Lookup("image-gc-period")
	if f == nil || !f.Hidden || f.DefValue != imagegc.Period.String() {
		t.Errorf("--image-gc-period = %+v, want hidden with default %s", f, imagegc.Period)
	}
}

func TestResolveErrors(t *testing.T) {
	bad := writeConfig(t, header+"maxPods: lots\n")
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"unknown flag", []string{"--no-such-flag"}, "no-such-flag"},
		{"bad flag value", []string{"--max-pods=lots"}, "max-pods"},
		{"bad config file", []string{"--config", bad}, `field "maxPods"`},
		{"missing config dir", []string{"--config-dir", "/nonexistent"}, `failed to walk through kubelet dropin directory "/nonexistent"`},
	}
	for _, tt := range tests {
		fs := pflag.NewFlagSet("nodeagent", pflag.ContinueOnError)
		fs.SetOutput(new(strings.Builder))
		if _, _, _, err := Resolve(fs, tt.args); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: err = %v, want %q", tt.name, err, tt.want)
		}
	}
}

func TestApplyFlagsIgnoresForeignFlags(t *testing.T) {
	fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
	verbosity := fs.Int("v", 0, "log level")
	Default().AddFlags(fs)
	if err := fs.Parse([]string{"--v=3", "--cluster-domain=example.org"}); err != nil {
		t.Fatal(err)
	}
	cfg := Default()
	if err := ApplyFlags(fs, cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.ClusterDomain != "example.org" || *verbosity != 3 {
		t.Errorf("clusterDomain=%q v=%d", cfg.ClusterDomain, *verbosity)
	}
}
