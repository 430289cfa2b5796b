package agentconfig

import (
	v1 "k8s.io/api/core/v1"
	"slices"
	"strings"
	"testing"
	"time"
)

func ptr[T any](v T) *T { return &v }

func TestSetDefaults(t *testing.T) {
	c := &Config{MaxPods: 7, ReadOnlyPort: ptr[int32](0), ResolverConfig: ptr("")}
	c.SetDefaults()
	checks := []struct {
		name      string
		got, want any
	}{
		{"apiVersion", c.APIVersion, APIVersion},
		{"kind", c.Kind, Kind},
		{"maxPods kept", c.MaxPods, int32(7)},
		{"readOnlyPort 0 kept", *c.ReadOnlyPort, int32(0)},
		{"resolvConf empty kept", *c.ResolverConfig, ""},
		{"syncFrequency", c.SyncFrequency.Duration, time.Minute},
		{"configMapAndSecretChangeDetectionStrategy", c.ConfigMapAndSecretChangeDetectionStrategy, "Watch"},
		{"fileCheckFrequency", c.FileCheckFrequency.Duration, 20 * time.Second},
		{"address", c.Address, "0.0.0.0"},
		{"read-only address", c.ReadOnlyAddress(), "127.0.0.1"},
		{"port", *c.Port, int32(10250)},
		{"webhook authn", *c.Authentication.Webhook.Enabled, true},
		{"webhook cacheTTL", c.Authentication.Webhook.CacheTTL.Duration, 2 * time.Minute},
		{"anonymous", *c.Authentication.Anonymous.Enabled, false},
		{"authorization mode", c.Authorization.Mode, AuthorizationModeWebhook},
		{"cacheAuthorizedTTL", c.Authorization.Webhook.CacheAuthorizedTTL.Duration, 5 * time.Minute},
		{"cacheUnauthorizedTTL", c.Authorization.Webhook.CacheUnauthorizedTTL.Duration, 30 * time.Second},
		{"healthzPort", *c.HealthzPort, int32(10248)},
		{"containerRuntimeEndpoint", c.ContainerRuntimeEndpoint, "unix:///run/containerd/containerd.sock"},
		{"imageEndpoint falls back", c.ImageEndpoint(), "unix:///run/containerd/containerd.sock"},
		{"runtimeRequestTimeout", c.RuntimeRequestTimeout.Duration, 2 * time.Minute},
		{"cgroupDriver", c.CgroupDriver, "cgroupfs"},
		{"cgroupsPerQOS", *c.CgroupsPerQOS, true},
		{"localStorageCapacityIsolation", *c.LocalStorageCapacityIsolation, true},
		{"containerLogMaxSize", c.ContainerLogMaxSize, "10Mi"},
		{"containerLogMaxFiles", *c.ContainerLogMaxFiles, int32(5)},
		{"containerLogMaxBytes", c.ContainerLogMaxBytes(), int64(10 << 20)},
		{"containerLogMaxWorkers", *c.ContainerLogMaxWorkers, int32(1)},
		{"containerLogMonitorInterval", c.ContainerLogMonitorInterval.Duration, 10 * time.Second},
		{"serializeImagePulls", *c.SerializeImagePulls, true},
		{"podPidsLimit", *c.PodPidsLimit, int64(-1)},
		{"seccompDefault", *c.SeccompDefault, false},
		{"registryPullQPS", *c.RegistryPullQPS, int32(5)},
		{"registryBurst", c.RegistryBurst, int32(10)},
		{"kubeAPIQPS", *c.KubeAPIQPS, int32(50)},
		{"kubeAPIBurst", c.KubeAPIBurst, int32(100)},
		{"eventRecordQPS", *c.EventRecordQPS, int32(50)},
		{"eventBurst", c.EventBurst, int32(100)},
		{"nodeStatusUpdateFrequency", c.NodeStatusUpdateFrequency.Duration, 10 * time.Second},
	}
	for _, ch := range checks {
		if ch.got != ch.want {
			t.Errorf("%s = %v, want %v", ch.name, ch.got, ch.want)
		}
	}
	if Default().ReadOnlyPort != nil {
		t.Errorf("readOnlyPort is defaulted before the mode is known")
	}
	for joined, want := range map[bool]int32{true: 0, false: 10255} {
		c := Default()
		c.SetModeDefaults(joined)
		if *c.ReadOnlyPort != want {
			t.Errorf("joined=%v: readOnlyPort = %d, want %d", joined, *c.ReadOnlyPort, want)
		}
		c.ReadOnlyPort = ptr[int32](10266)
		if c.SetModeDefaults(joined); *c.ReadOnlyPort != 10266 {
			t.Errorf("joined=%v: a set readOnlyPort was changed to %d", joined, *c.ReadOnlyPort)
		}
		// Upstream's default, joined or not; unset until the mode is known.
		if *c.ServerTLSBootstrap {
			t.Errorf("joined=%v: serverTLSBootstrap defaults to true, upstream's default is false", joined)
		}
		c.ServerTLSBootstrap = ptr(true)
		if c.SetModeDefaults(joined); !*c.ServerTLSBootstrap {
			t.Errorf("joined=%v: a set serverTLSBootstrap was changed", joined)
		}
	}
	if Default().ServerTLSBootstrap != nil {
		t.Errorf("serverTLSBootstrap is defaulted before the mode is known")
	}
	// serializeImagePulls follows maxParallelImagePulls when unset, as upstream's.
	for n, want := range map[int32]bool{1: true, 2: false, 5: false} {
		c := &Config{MaxParallelImagePulls: ptr(n)}
		if c.SetDefaults(); *c.SerializeImagePulls != want {
			t.Errorf("maxParallelImagePulls %d: serializeImagePulls = %v, want %v", n, *c.SerializeImagePulls, want)
		}
	}
	c.Address = "127.0.0.2"
	if c.ReadOnlyAddress() != "127.0.0.2" {
		t.Errorf("a loopback address is not used for the read-only server: %q", c.ReadOnlyAddress())
	}
	if DefaultFlags().RootDir != "/var/lib/nodeagent" {
		t.Errorf("default root dir = %q", DefaultFlags().RootDir)
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*Config)
		want   string // "" means valid
	}{
		{"defaults", func(*Config) {}, ""},
		{"read-only port too big", func(c *Config) { c.ReadOnlyPort = ptr[int32](70000) },
			"readOnlyPort: Invalid value: 70000: must be between 0 and 65535, inclusive"},
		{"read-only port disabled", func(c *Config) { c.ReadOnlyPort = ptr[int32](0) }, ""},
		{"healthz port negative", func(c *Config) { c.HealthzPort = ptr[int32](-1) }, "healthzPort: Invalid value: -1"},
		{"port clash", func(c *Config) { c.ReadOnlyPort, c.HealthzPort = ptr[int32](10255), ptr[int32](10255) }, "readOnlyPort: Invalid value: 10255: must differ from healthzPort"},
		{"server port zero", func(c *Config) { c.Port = ptr[int32](0) }, "port: Invalid value: 0: must be between 1 and 65535, inclusive"},
		{"server port clash", func(c *Config) { c.ReadOnlyPort = ptr[int32](10250) }, "port: Invalid value: 10250: must differ from readOnlyPort"},
		{"server port clash, server off", func(c *Config) { c.ReadOnlyPort, c.EnableServer = ptr[int32](10250), ptr(false) }, ""},
		{"server port on another address", func(c *Config) {
			c.Address, c.HealthzBindAddress, c.HealthzPort = "10.0.0.1", "127.0.0.1", ptr[int32](10250)
		}, ""},
		{"authorization mode", func(c *Config) { c.Authorization.Mode = "RBAC" }, `authorization.mode: Unsupported value: "RBAC"`},
		{"cert without key", func(c *Config) { c.TLSCertFile = "/c.crt" }, "tlsPrivateKeyFile: Required value"},
		{"negative cache TTL", func(c *Config) { c.Authorization.Webhook.CacheUnauthorizedTTL.Duration = -time.Second },
			`authorization.webhook.cacheUnauthorizedTTL: Invalid value: "-1s"`},
		{"unknown cgroup driver", func(c *Config) { c.CgroupDriver = "cgroupv3" }, `cgroupDriver: Unsupported value: "cgroupv3": supported values: "cgroupfs"`},
		{"bad address", func(c *Config) { c.Address = "localhost" }, `address: Invalid value: "localhost": must be a valid IP address`},
		{"bad cluster DNS", func(c *Config) { c.ClusterDNS = []string{"10.0.0.10", "x"} }, `clusterDNS[1]: Invalid value: "x"`},
		{"bad cluster domain", func(c *Config) { c.ClusterDomain = "Cluster_Local" }, "clusterDomain: Invalid value"},
		{"zero duration", func(c *Config) { c.SyncFrequency.Duration = -time.Second }, `syncFrequency: Invalid value: "-1s": must be greater than 0`},
		{"endpoint scheme", func(c *Config) { c.ContainerRuntimeEndpoint = "tcp://1.2.3.4:1" }, "containerRuntimeEndpoint: Invalid value"},
		{"bare socket path", func(c *Config) { c.ImageServiceEndpoint = "/run/crio/crio.sock" }, ""},
		{"empty endpoint", func(c *Config) { c.ContainerRuntimeEndpoint = "" }, "containerRuntimeEndpoint: Required value"},
		{"log size", func(c *Config) { c.ContainerLogMaxSize = "lots" }, `containerLogMaxSize: Invalid value: "lots"`},
		{"log files", func(c *Config) { c.ContainerLogMaxFiles = ptr[int32](1) }, "containerLogMaxFiles: Invalid value: 1: must be greater than 1"},
		{"parallel pulls zero", func(c *Config) { c.MaxParallelImagePulls = ptr[int32](0) },
			"maxParallelImagePulls: Invalid value: 0: must be a positive number"},
		{"parallel pulls while serialized", func(c *Config) { c.MaxParallelImagePulls = ptr[int32](3) },
			"maxParallelImagePulls: Invalid value: 3: cannot be larger than 1 unless SerializeImagePulls (--serialize-image-pulls) is set to false"},
		{"one pull while serialized", func(c *Config) { c.MaxParallelImagePulls = ptr[int32](1) }, ""},
		{"parallel pulls", func(c *Config) { c.MaxParallelImagePulls, c.SerializeImagePulls = ptr[int32](3), ptr(false) }, ""},
		{"log workers", func(c *Config) { c.ContainerLogMaxWorkers = ptr[int32](0) }, "containerLogMaxWorkers: Invalid value: 0"},
		{"log monitor interval", func(c *Config) { c.ContainerLogMonitorInterval.Duration = time.Second },
			`containerLogMonitorInterval: Invalid value: "1s": must be greater than or equal to 3s`},
		{"max pods", func(c *Config) { c.MaxPods = -1 }, "maxPods: Invalid value: -1"},
		{"pids limit", func(c *Config) { c.PodPidsLimit = ptr[int64](-2) }, "podPidsLimit: Invalid value: -2"},
		{"API QPS", func(c *Config) { c.KubeAPIQPS = ptr[int32](-1) }, "kubeAPIQPS: Invalid value: -1: must not be a negative number"},
		{"API burst", func(c *Config) { c.KubeAPIBurst = -1 }, "kubeAPIBurst: Invalid value: -1: must not be a negative number"},
		{"event QPS", func(c *Config) { c.EventRecordQPS = ptr[int32](-1) }, "eventRecordQPS: Invalid value: -1: must not be a negative number"},
		{"event burst", func(c *Config) { c.EventBurst = -1 }, "eventBurst: Invalid value: -1: must not be a negative number"},
		{"relative logs dir", func(c *Config) { c.PodLogsDir = "logs" }, `podLogsDir: Invalid value: "logs"`},
		{"cgroup root", func(c *Config) { c.CgroupRoot = "kubepods" }, `cgroupRoot: Invalid value: "kubepods"`},
		{"kind", func(c *Config) { c.Kind = "Pod" }, `kind: Unsupported value: "Pod"`},
		{"change detection Cache", func(c *Config) { c.ConfigMapAndSecretChangeDetectionStrategy = "Cache" }, ""},
		{"change detection Get", func(c *Config) { c.ConfigMapAndSecretChangeDetectionStrategy = "Get" }, ""},
		{"change detection unknown", func(c *Config) { c.ConfigMapAndSecretChangeDetectionStrategy = "watch" },
			`configMapAndSecretChangeDetectionStrategy: Invalid value: "watch": unknown configmap and secret manager mode: watch`},
		{"idsPerPod below the unit", func(c *Config) { c.UserNamespaces = &UserNamespaces{IDsPerPod: ptr[int64](1000)} },
			"userNamespaces.idsPerPod: Invalid value: 1000: must not be less than 65536"},
		{"idsPerPod not a multiple", func(c *Config) { c.UserNamespaces = &UserNamespaces{IDsPerPod: ptr[int64](65536 + 1)} },
			"userNamespaces.idsPerPod: Invalid value: 65537: must be a multiple of 65536"},
		{"idsPerPod too large", func(c *Config) { c.UserNamespaces = &UserNamespaces{IDsPerPod: ptr[int64](1 << 32)} },
			"userNamespaces.idsPerPod: Invalid value: 4294967296: must not be more than 4294967295"},
		{"idsPerPod a multiple", func(c *Config) { c.UserNamespaces = &UserNamespaces{IDsPerPod: ptr[int64](4 * 65536)} }, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Default()
			c.StaticPodPath = "/etc/kubernetes/manifests"
			tt.mutate(c)
			_, err := c.Validate()
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("unexpected error: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("error = %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

func TestValidateWarnings(t *testing.T) {
	c := Default()
	c.ClusterDNS = []string{"10.96.0.10"}
	c.Authentication.Anonymous.Enabled = ptr(true)
	c.Authorization.Mode = AuthorizationModeAlwaysAllow
	warnings, err := c.Validate()
	if err != nil {
		t.Fatal(err)
	}
	all := strings.Join(warnings, "\n")
	for _, want := range []string{"staticPodPath is empty", "clusterDomain is empty", "anyone who reaches 0.0.0.0 port 10250"} {
		if !strings.Contains(all, want) {
			t.Errorf("warnings %q lack %q", warnings, want)
		}
	}
	if strings.Contains(all, "not enforced") {
		t.Errorf("defaults must not warn about unenforced settings: %q", warnings)
	}
}

func TestValidateWarnsAboutUnenforcedSettings(t *testing.T) {
	c := Default()
	c.StaticPodPath = "/etc/nodeagent/manifests"
	pids := int64(100)
	c.PodPidsLimit = &pids
	c.ContainerLogMaxSize = "1Mi"
	c.MaxPods = 10
	warnings, err := c.Validate()
	if err != nil {
		t.Fatal(err)
	}
	all := strings.Join(warnings, "\n")
	if strings.Contains(all, "podPidsLimit") {
		t.Errorf("podPidsLimit is enforced (the pod cgroup's pids.max), yet warned about: %q", warnings)
	}
	if strings.Contains(all, "maxPods") {
		t.Errorf("maxPods is enforced (node capacity and admission), yet warned about: %q", warnings)
	}
	if strings.Contains(all, "containerLog") {
		t.Errorf("container log limits are enforced (pkg/logrotate), yet warned about: %q", warnings)
	}
}

func TestValidateNodeSettings(t *testing.T) {
	c := Default()
	c.RegisterWithTaints = []v1.Taint{{Key: "dedicated", Value: "gpu", Effect: v1.TaintEffectNoSchedule}, {Key: "bad key", Effect: "Sometimes"}}
	c.SystemReserved = map[string]string{"cpu": "500m", "gpu": "1"}
	c.KubeReserved = map[string]string{"memory": "lots"}
	_, err := c.Validate()
	if err == nil {
		t.Fatal("invalid taints and reservations accepted")
	}
	for _, want := range []string{"registerWithTaints[1].key", "registerWithTaints[1].effect", "systemReserved[gpu]", "kubeReserved[memory]"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "registerWithTaints[0]") || strings.Contains(err.Error(), "systemReserved[cpu]") {
		t.Errorf("valid entries rejected: %v", err)
	}
	c.RegisterWithTaints = c.RegisterWithTaints[:1]
	c.SystemReserved = map[string]string{"cpu": "500m", "memory": "1Gi"}
	c.KubeReserved = map[string]string{"memory": "512Mi"}
	if _, err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	r := c.Reserved()
	if cpu, mem := r[v1.ResourceCPU], r[v1.ResourceMemory]; cpu.MilliValue() != 500 || mem.Value() != 1536<<20 {
		t.Errorf("reserved cpu %s memory %s, want 500m and 1536Mi", &cpu, &mem)
	}
}

func TestValidateReportsAllErrors(t *testing.T) {
	c := Default()
	c.MaxPods, c.CgroupDriver = -1, "systemd"
	_, err := c.Validate()
	if err == nil || !strings.Contains(err.Error(), "maxPods") || !strings.Contains(err.Error(), "cgroupDriver") {
		t.Errorf("error = %v, want both maxPods and cgroupDriver", err)
	}
}

func TestValidateAllowedUnsafeSysctls(t *testing.T) {
	c := Default()
	c.AllowedUnsafeSysctls = []string{"net.core.somaxconn", "net.*", "kernel.shm*", "fs.mqueue.*", "net/ipv4/*"}
	if _, err := c.Validate(); err != nil {
		t.Fatalf("valid names and patterns refused: %v", err)
	}
	for s, want := range map[string]string{
		"vm.swappiness": `allowedUnsafeSysctls[0]: Invalid value: "vm.swappiness": the sysctls "vm.swappiness" are not known to be namespaced`,
		"kernel.*":      `allowedUnsafeSysctls[0]: Invalid value: "kernel.*": the sysctls "kernel." are not known to be namespaced`,
		"*":             `allowedUnsafeSysctls[0]: Invalid value: "*": the sysctls "" are not known to be namespaced`,
		"net.*.core":    `allowedUnsafeSysctls[0]: Invalid value: "net.*.core": sysctl "net.*.core" must have at most 253 characters and match regex`,
		"NET.core":      `sysctl "NET.core" must have at most 253 characters`,
	} {
		c.AllowedUnsafeSysctls = []string{s}
		_, err := c.Validate()
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want %q", s, err, want)
		}
	}
}

func TestValidateOOMScoreAdj(t *testing.T) {
	for _, n := range []int32{-1000, -999, 0, 1000} {
		c := Default()
		c.OOMScoreAdj = &n
		if _, err := c.Validate(); err != nil {
			t.Errorf("oomScoreAdj %d: %v", n, err)
		}
	}
	for _, n := range []int32{-1001, 1001} {
		c := Default()
		c.OOMScoreAdj = &n
		_, err := c.Validate()
		if err == nil || !strings.Contains(err.Error(), "oomScoreAdj: Invalid value: ") || !strings.Contains(err.Error(), "must be between -1000 and 1000, inclusive") {
			t.Errorf("oomScoreAdj %d: error %v", n, err)
		}
	}
	if *Default().OOMScoreAdj != -999 {
		t.Errorf("default oomScoreAdj %d, want -999", *Default().OOMScoreAdj)
	}
}

// enforceNodeAllocatable is checked with the kubelet's rules and words.
func TestValidateEnforceNodeAllocatable(t *testing.T) {
	if got := Default().EnforceNodeAllocatable; !slices.Equal(got, []string{"pods"}) {
		t.Errorf("default enforceNodeAllocatable %q, want [pods]", got)
	}
	cases := []struct {
		name    string
		enforce []string
		mutate  func(*Config)
		want    []string // substrings of the error; none: valid
	}{
		{name: "pods", enforce: []string{"pods"}},
		{name: "empty", enforce: []string{}},
		{name: "none", enforce: []string{"none"}},
		{name: "reserved with cgroups", enforce: []string{"pods", "system-reserved", "kube-reserved-compressible"},
			mutate: func(c *Config) { c.SystemReservedCgroup, c.KubeReservedCgroup = "/system", "/kube" }},
		{name: "system-reserved without its cgroup", enforce: []string{"pods", "system-reserved"},
			want: []string{`enforceNodeAllocatable[1]: Invalid value: "system-reserved": systemReservedCgroup (--system-reserved-cgroup) must be specified when "system-reserved" or "system-reserved-compressible" included in enforceNodeAllocatable (--enforce-node-allocatable)`}},
		{name: "kube-reserved-compressible without its cgroup", enforce: []string{"kube-reserved-compressible"},
			want: []string{`kubeReservedCgroup (--kube-reserved-cgroup) must be specified when "kube-reserved" or "kube-reserved-compressible" included`}},
		{name: "none with more", enforce: []string{"none", "pods"},
			want: []string{`may not contain additional enforcements when "none" is specified`}},
		{name: "unknown", enforce: []string{"memory"},
			want: []string{`option "memory" specified for enforceNodeAllocatable (--enforce-node-allocatable). Valid options are "pods", "system-reserved", "system-reserved-compressible", "kube-reserved", "kube-reserved-compressible" or "none"`}},
		{name: "duplicate", enforce: []string{"pods", "pods"},
			want: []string{`duplicated enforcements "pods" in enforceNodeAllocatable (--enforce-node-allocatable)`}},
		{name: "both forms", enforce: []string{"system-reserved", "system-reserved-compressible"},
			mutate: func(c *Config) { c.SystemReservedCgroup = "/system" },
			want:   []string{`both "system-reserved" and "system-reserved-compressible" cannot be specified together`}},
		{name: "without cgroupsPerQOS", enforce: []string{"pods"},
			mutate: func(c *Config) { off := false; c.CgroupsPerQOS = &off },
			want:   []string{`cgroupsPerQOS (--cgroups-per-qos) must be set to true when "pods" contained in enforceNodeAllocatable (--enforce-node-allocatable)`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := Default()
			c.EnforceNodeAllocatable = tc.enforce
			if tc.mutate != nil {
				tc.mutate(c)
			}
			_, err := c.Validate()
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil {
				t.Fatalf("accepted %q", tc.enforce)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

// cgroupDriver systemd is refused: with runc's words where systemd is not
// init (as on these hosts), as not supported where it is.
func TestValidateCgroupDriverSystemd(t *testing.T) {
	defer func(f func() bool) { systemdRunning = f }(systemdRunning)
	for _, tc := range []struct {
		running bool
		want    string
	}{
		{false, `cgroupDriver: Invalid value: "systemd": systemd not running on this host, cannot use systemd cgroups manager; use "cgroupfs"`},
		{true, `cgroupDriver: Unsupported value: "systemd": supported values: "cgroupfs"`},
	} {
		systemdRunning = func() bool { return tc.running }
		c := Default()
		c.CgroupDriver = "systemd"
		if _, err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("systemd running=%v: error %v, want %q", tc.running, err, tc.want)
		}
	}
}
