package agentconfig

import (
	"time"
)

// Default values (see Config for the fields they belong to).
const (
	DefaultSyncFrequency             = time.Minute
	DefaultFileCheckFrequency        = 20 * time.Second
	DefaultAddress                   = "127.0.0.1"
	DefaultReadOnlyPort              = 10255
	DefaultHealthzPort               = 10248
	DefaultHealthzBindAddress        = "127.0.0.1"
	DefaultContainerRuntimeEndpoint  = "unix:///run/containerd/containerd.sock"
	DefaultRuntimeRequestTimeout     = 2 * time.Minute
	DefaultCgroupDriver              = "cgroupfs"
	DefaultPodLogsDir                = "/var/log/pods"
	DefaultContainerLogMaxSize       = "10Mi"
	DefaultContainerLogMaxFiles      = 5
	DefaultMaxPods                   = 110
	DefaultResolverConfig            = "/etc/resolv.conf"
	DefaultPodPidsLimit              = -1
	DefaultRegistryPullQPS           = 5
	DefaultRegistryBurst             = 10
	DefaultNodeStatusUpdateFrequency = 10 * time.Second
	DefaultRootDir                   = "/var/lib/nodeagent"
)

// Default returns a Config with every default applied.
func Default() *Config {
	c := &Config{}
	c.SetDefaults()
	return c
}

// DefaultFlags returns Flags with their defaults.
func DefaultFlags() *Flags {
	return &Flags{RootDir: DefaultRootDir}
}

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
	defaultString(&c.Address, DefaultAddress)
	defaultString(&c.HealthzBindAddress, DefaultHealthzBindAddress)
	defaultString(&c.ContainerRuntimeEndpoint, DefaultContainerRuntimeEndpoint)
	defaultString(&c.CgroupDriver, DefaultCgroupDriver)
	defaultString(&c.PodLogsDir, DefaultPodLogsDir)
	defaultString(&c.ContainerLogMaxSize, DefaultContainerLogMaxSize)
	defaultPtr(&c.ReadOnlyPort, DefaultReadOnlyPort)
	defaultPtr(&c.HealthzPort, DefaultHealthzPort)
	defaultPtr(&c.ContainerLogMaxFiles, DefaultContainerLogMaxFiles)
	defaultPtr(&c.RegistryPullQPS, DefaultRegistryPullQPS)
	defaultPtr(&c.PodPidsLimit, DefaultPodPidsLimit)
	defaultPtr(&c.ResolverConfig, DefaultResolverConfig)
	defaultPtr(&c.CgroupsPerQOS, true)
	defaultPtr(&c.SerializeImagePulls, true)
	defaultPtr(&c.EnableServer, true)
	if c.MaxPods == 0 {
		c.MaxPods = DefaultMaxPods
	}
	if c.RegistryBurst == 0 {
		c.RegistryBurst = DefaultRegistryBurst
	}
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
