package agentconfig

import (
	"time"

	"github.com/nodeagent/nodeagent/pkg/imagegc"
)

// Default values (see Config for the fields they belong to).
const (
	DefaultSyncFrequency             = time.Minute
	DefaultChangeDetectionStrategy   = "Watch"
	DefaultFileCheckFrequency        = 20 * time.Second
	DefaultAddress                   = "0.0.0.0"
	DefaultPort                      = 10250
	DefaultReadOnlyAddress           = "127.0.0.1"
	DefaultReadOnlyPort              = 10255
	DefaultAuthenticationCacheTTL    = 2 * time.Minute
	DefaultAuthorizedCacheTTL        = 5 * time.Minute
	DefaultUnauthorizedCacheTTL      = 30 * time.Second
	DefaultHealthzPort               = 10248
	DefaultHealthzBindAddress        = "127.0.0.1"
	DefaultContainerRuntimeEndpoint  = "unix:///run/containerd/containerd.sock"
	DefaultRuntimeRequestTimeout     = 2 * time.Minute
	DefaultCgroupDriver              = "cgroupfs"
	DefaultPodLogsDir                = "/var/log/pods"
	DefaultContainerLogMaxSize       = "10Mi"
	DefaultContainerLogMaxFiles      = 5
	DefaultMaxPods                   = 110
	DefaultOOMScoreAdj               = -999
	DefaultResolverConfig            = "/etc/resolv.conf"
	DefaultPodPidsLimit              = -1
	DefaultRegistryPullQPS           = 5
	DefaultRegistryBurst             = 10
	DefaultKubeAPIQPS                = 50
	DefaultKubeAPIBurst              = 100
	DefaultEventRecordQPS            = 50
	DefaultEventBurst                = 100
	DefaultNodeStatusUpdateFrequency = 10 * time.Second
	DefaultVolumeStatsAggPeriod      = time.Minute
	DefaultRootDir                   = "/var/lib/nodeagent"
)

// Container log rotation defaults (the kubelet's).
const (
	DefaultContainerLogMaxWorkers      = 1
	DefaultContainerLogMonitorInterval = 10 * time.Second
)

// DefaultIDsPerPod is userNamespaces.idsPerPod's default, and the unit
// it must be a multiple of (the kubelet's userNsUnitLength).
const DefaultIDsPerPod = 65536

// Default returns a Config with every default applied.
func Default() *Config {
	c := &Config{}
	c.SetDefaults()
	return c
}

// DefaultFlags returns Flags with their defaults.
func DefaultFlags() *Flags {
	return &Flags{RootDir: DefaultRootDir, CNIConfDir: DefaultCNIConfDir, CNIBinDirs: DefaultCNIBinDirs,
		ImageGCPeriod: imagegc.Period}
}

// The CNI directories' defaults: the usual conf_dir, and the usual
// bin_dir followed by where Debian's containernetworking-plugins puts them.
var (
	DefaultCNIConfDir = "/etc/cni/net.d"
	DefaultCNIBinDirs = []string{"/opt/cni/bin", "/usr/lib/cni"}
)

// SetDefaults fills every unset field with its default, like the kubelet's
// SetDefaults_KubeletConfiguration. Set fields are left alone.
func (c *Config) SetDefaults() {
	if c.APIVersion == "" {
		c.APIVersion = APIVersion
	}
	if c.Kind == "" {
		c.Kind = Kind
	}
	defaultDuration(&c.SyncFrequency.Duration, DefaultSyncFrequency)
	defaultDuration(&c.FileCheckFrequency.Duration, DefaultFileCheckFrequency)
	defaultDuration(&c.RuntimeRequestTimeout.Duration, DefaultRuntimeRequestTimeout)
	defaultDuration(&c.NodeStatusUpdateFrequency.Duration, DefaultNodeStatusUpdateFrequency)
	defaultDuration(&c.VolumeStatsAggPeriod.Duration, DefaultVolumeStatsAggPeriod)
	defaultDuration(&c.ContainerLogMonitorInterval.Duration, DefaultContainerLogMonitorInterval)
	defaultString(&c.Address, DefaultAddress)
	defaultString(&c.ConfigMapAndSecretChangeDetectionStrategy, DefaultChangeDetectionStrategy)
	defaultString(&c.HealthzBindAddress, DefaultHealthzBindAddress)
	defaultString(&c.ContainerRuntimeEndpoint, DefaultContainerRuntimeEndpoint)
	defaultString(&c.CgroupDriver, DefaultCgroupDriver)
	defaultString(&c.PodLogsDir, DefaultPodLogsDir)
	defaultString(&c.ContainerLogMaxSize, DefaultContainerLogMaxSize)
	defaultPtr(&c.Port, DefaultPort)
	defaultPtr(&c.HealthzPort, DefaultHealthzPort)
	defaultPtr(&c.OOMScoreAdj, DefaultOOMScoreAdj)
	defaultPtr(&c.ContainerLogMaxFiles, DefaultContainerLogMaxFiles)
	defaultPtr(&c.ContainerLogMaxWorkers, DefaultContainerLogMaxWorkers)
	defaultPtr(&c.RegistryPullQPS, DefaultRegistryPullQPS)
	defaultPtr(&c.KubeAPIQPS, DefaultKubeAPIQPS)
	defaultPtr(&c.EventRecordQPS, DefaultEventRecordQPS)
	defaultPtr(&c.PodPidsLimit, DefaultPodPidsLimit)
	defaultPtr(&c.ResolverConfig, DefaultResolverConfig)
	defaultPtr(&c.CgroupsPerQOS, true)
	defaultPtr(&c.LocalStorageCapacityIsolation, true)
	if c.EnforceNodeAllocatable == nil { // an explicit [] stays empty, as upstream's
		c.EnforceNodeAllocatable = []string{EnforcePods}
	}
	// As upstream: serialized unless parallel pulls are asked for by
	// maxParallelImagePulls >= 2.
	defaultPtr(&c.SerializeImagePulls, c.MaxParallelImagePulls == nil || *c.MaxParallelImagePulls < 2)
	defaultPtr(&c.EnableServer, true)
	defaultPtr(&c.EnableProfilingHandler, true)
	defaultPtr(&c.SeccompDefault, false)
	c.setAuthDefaults()
	c.setImageGCDefaults()
	c.setEvictionDefaults()
	if c.MaxPods == 0 {
		c.MaxPods = DefaultMaxPods
	}
	if c.RegistryBurst == 0 {
		c.RegistryBurst = DefaultRegistryBurst
	}
	if c.KubeAPIBurst == 0 {
		c.KubeAPIBurst = DefaultKubeAPIBurst
	}
	if c.EventBurst == 0 {
		c.EventBurst = DefaultEventBurst
	}
}

// setAuthDefaults applies upstream's v1beta1 defaults: webhook token
// authentication on, anonymous off, Webhook authorization.
func (c *Config) setAuthDefaults() {
	defaultPtr(&c.Authentication.Webhook.Enabled, true)
	defaultPtr(&c.Authentication.Anonymous.Enabled, false)
	defaultDuration(&c.Authentication.Webhook.CacheTTL.Duration, DefaultAuthenticationCacheTTL)
	if c.Authorization.Mode == "" {
		c.Authorization.Mode = AuthorizationModeWebhook
	}
	defaultDuration(&c.Authorization.Webhook.CacheAuthorizedTTL.Duration, DefaultAuthorizedCacheTTL)
	defaultDuration(&c.Authorization.Webhook.CacheUnauthorizedTTL.Duration, DefaultUnauthorizedCacheTTL)
}

// SetModeDefaults fills the defaults that depend on whether the agent
// joined an API server: readOnlyPort is off when joined (upstream's
// v1beta1 default) and 10255 standalone, where it is the only way to list
// the agent's pods. serverTLSBootstrap defaults to false (upstream's
// v1beta1 default) but stays unset until here, so that whoever starts an
// agent can tell a file that chose it from one that did not (`nodeagent
// server` turns it on for its own agent). Call it once the mode is known.
func (c *Config) SetModeDefaults(joined bool) {
	defaultPtr(&c.ServerTLSBootstrap, false)
	if joined {
		defaultPtr(&c.ReadOnlyPort, 0)
		return
	}
	defaultPtr(&c.ReadOnlyPort, DefaultReadOnlyPort)
}

func defaultDuration(d *time.Duration, v time.Duration) {
	if *d == 0 {
		*d = v
	}
}

func defaultString(s *string, v string) {
	if *s == "" {
		*s = v
	}
}

func defaultPtr[T any](p **T, v T) {
	if *p == nil {
		*p = &v
	}
}
