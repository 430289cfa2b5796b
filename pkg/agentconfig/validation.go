package agentconfig

import (
	"errors"
	"fmt"
	"math"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	tracingapi "k8s.io/component-base/tracing/api/v1"

	"github.com/nodeagent/nodeagent/pkg/sysctl"
)

// Validate checks a defaulted Config. Errors name the field, e.g.
// "readOnlyPort: Invalid value: 70000: must be between 0 and 65535,
// inclusive"; warnings describe legal but doubtful settings.
func (c *Config) Validate() (warnings []string, err error) {
	var errs field.ErrorList
	errs = append(errs, c.validateTypeMeta()...)
	errs = append(errs, c.validateDurations()...)
	errs = append(errs, c.validateNetwork()...)
	errs = append(errs, c.validateRuntime()...)
	errs = append(errs, c.validateChangeDetection()...)
	errs = append(errs, c.validateLimits()...)
	errs = append(errs, c.validateImageGC()...)
	errs = append(errs, c.validateDNS()...)
	errs = append(errs, c.validateNode()...)
	errs = append(errs, c.validateEnforcement()...)
	errs = append(errs, c.validateAuth()...)
	errs = append(errs, c.validateSysctls()...)
	errs = append(errs, c.validateUserNamespaces()...)
	// Upstream's own check and messages; the agent has no KubeletTracing
	// gate (on by default upstream): tracing is always allowed.
	errs = append(errs, tracingapi.ValidateTracingConfiguration(c.Tracing, nil, field.NewPath("tracing"))...)
	if err := c.validateEviction(); err != nil {
		return c.warnings(), errors.Join(errs.ToAggregate(), err)
	}
	return c.warnings(), errs.ToAggregate()
}

// validateUserNamespaces checks userNamespaces.idsPerPod as the kubelet's
// validateKubeletOSConfiguration does on Linux (its wording).
func (c *Config) validateUserNamespaces() field.ErrorList {
	if c.UserNamespaces == nil || c.UserNamespaces.IDsPerPod == nil {
		return nil
	}
	n, p := *c.UserNamespaces.IDsPerPod, field.NewPath("userNamespaces", "idsPerPod")
	switch {
	case n < DefaultIDsPerPod:
		return field.ErrorList{field.Invalid(p, n, fmt.Sprintf("must not be less than %d", DefaultIDsPerPod))}
	case n%DefaultIDsPerPod != 0:
		return field.ErrorList{field.Invalid(p, n, fmt.Sprintf("must be a multiple of %d", DefaultIDsPerPod))}
	case n > math.MaxUint32:
		return field.ErrorList{field.Invalid(p, n, fmt.Sprintf("must not be more than %d", int64(math.MaxUint32)))}
	}
	return nil
}

func (c *Config) validateTypeMeta() field.ErrorList {
	var errs field.ErrorList
	if c.APIVersion != APIVersion {
		errs = append(errs, field.NotSupported(field.NewPath("apiVersion"), c.APIVersion, []string{APIVersion}))
	}
	if c.Kind != Kind {
		errs = append(errs, field.NotSupported(field.NewPath("kind"), c.Kind, []string{Kind}))
	}
	return errs
}

func (c *Config) validateDurations() field.ErrorList {
	var errs field.ErrorList
	for _, d := range []struct {
		name string
		d    time.Duration
	}{
		{"syncFrequency", c.SyncFrequency.Duration},
		{"fileCheckFrequency", c.FileCheckFrequency.Duration},
		{"runtimeRequestTimeout", c.RuntimeRequestTimeout.Duration},
		{"nodeStatusUpdateFrequency", c.NodeStatusUpdateFrequency.Duration},
	} {
		if d.d <= 0 {
			errs = append(errs, field.Invalid(field.NewPath(d.name), d.d.String(), "must be greater than 0"))
		}
	}
	return errs
}

func (c *Config) validateNetwork() field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, validateIP(field.NewPath("address"), c.Address)...)
	errs = append(errs, validateIP(field.NewPath("healthzBindAddress"), c.HealthzBindAddress)...)
	port, ro, hz := deref(c.Port), deref(c.ReadOnlyPort), deref(c.HealthzPort)
	if port < 1 || port > 65535 {
		errs = append(errs, field.Invalid(field.NewPath("port"), port, "must be between 1 and 65535, inclusive"))
	}
	if ro < 0 || ro > 65535 {
		errs = append(errs, field.Invalid(field.NewPath("readOnlyPort"), ro, "must be between 0 and 65535, inclusive"))
	}
	if hz < 0 || hz > 65535 {
		errs = append(errs, field.Invalid(field.NewPath("healthzPort"), hz, "must be between 0 and 65535, inclusive"))
	}
	if ro != 0 && ro == hz && sameHost(c.ReadOnlyAddress(), c.HealthzBindAddress) {
		errs = append(errs, field.Invalid(field.NewPath("readOnlyPort"), ro, "must differ from healthzPort on the same address"))
	}
	serverOn := c.EnableServer == nil || *c.EnableServer
	for _, other := range []struct {
		name string
		port int32
		addr string
	}{{"readOnlyPort", ro, c.ReadOnlyAddress()}, {"healthzPort", hz, c.HealthzBindAddress}} {
		if serverOn && port == other.port && sameHost(c.Address, other.addr) {
			errs = append(errs, field.Invalid(field.NewPath("port"), port, "must differ from "+other.name+" on the same address"))
		}
	}
	return errs
}

func (c *Config) validateAuth() field.ErrorList {
	var errs field.ErrorList
	switch c.Authorization.Mode {
	case AuthorizationModeAlwaysAllow, AuthorizationModeWebhook:
	default:
		errs = append(errs, field.NotSupported(field.NewPath("authorization", "mode"), c.Authorization.Mode,
			[]string{string(AuthorizationModeAlwaysAllow), string(AuthorizationModeWebhook)}))
	}
	if (c.TLSCertFile == "") != (c.TLSPrivateKeyFile == "") {
		errs = append(errs, field.Required(field.NewPath("tlsPrivateKeyFile"), "tlsCertFile and tlsPrivateKeyFile must be set together"))
	}
	for _, d := range []struct {
		path *field.Path
		d    time.Duration
	}{
		{field.NewPath("authentication", "webhook", "cacheTTL"), c.Authentication.Webhook.CacheTTL.Duration},
		{field.NewPath("authorization", "webhook", "cacheAuthorizedTTL"), c.Authorization.Webhook.CacheAuthorizedTTL.Duration},
		{field.NewPath("authorization", "webhook", "cacheUnauthorizedTTL"), c.Authorization.Webhook.CacheUnauthorizedTTL.Duration},
	} {
		if d.d < 0 {
			errs = append(errs, field.Invalid(d.path, d.d.String(), "must be greater than or equal to 0"))
		}
	}
	return errs
}

// validateChangeDetection: upstream's validation lets any value through
// and NewMainKubelet refuses an unknown one with this message; here it is
// refused with the rest of the configuration.
func (c *Config) validateChangeDetection() field.ErrorList {
	switch v := c.ConfigMapAndSecretChangeDetectionStrategy; v {
	case "Watch", "Cache", "Get":
		return nil
	default:
		return field.ErrorList{field.Invalid(field.NewPath("configMapAndSecretChangeDetectionStrategy"), v,
			fmt.Sprintf("unknown configmap and secret manager mode: %v", v))}
	}
}

func (c *Config) validateRuntime() field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, validateEndpoint(field.NewPath("containerRuntimeEndpoint"), c.ContainerRuntimeEndpoint, true)...)
	errs = append(errs, validateEndpoint(field.NewPath("imageServiceEndpoint"), c.ImageServiceEndpoint, false)...)
	switch {
	case c.CgroupDriver == "systemd" && !systemdRunning():
		// What runc answers a systemd cgroup manager without systemd as
		// init, said before any pod fails on it.
		errs = append(errs, field.Invalid(field.NewPath("cgroupDriver"), c.CgroupDriver,
			`systemd not running on this host, cannot use systemd cgroups manager; use "cgroupfs"`))
	case c.CgroupDriver != DefaultCgroupDriver:
		errs = append(errs, field.NotSupported(field.NewPath("cgroupDriver"), c.CgroupDriver, []string{DefaultCgroupDriver}))
	}
	if c.CgroupRoot != "" && !strings.HasPrefix(c.CgroupRoot, "/") {
		errs = append(errs, field.Invalid(field.NewPath("cgroupRoot"), c.CgroupRoot, "must be an absolute cgroup path"))
	}
	if !filepath.IsAbs(c.PodLogsDir) {
		errs = append(errs, field.Invalid(field.NewPath("podLogsDir"), c.PodLogsDir, "must be an absolute path"))
	}
	return errs
}

// systemdRunning is runc's test for systemd as init (a variable for tests).
var systemdRunning = func() bool {
	fi, err := os.Lstat("/run/systemd/system")
	return err == nil && fi.IsDir()
}

// minContainerLogMonitorInterval is the kubelet's lower bound: each check
// lists every container through the CRI.
const minContainerLogMonitorInterval = 3 * time.Second

func (c *Config) validateLimits() field.ErrorList {
	var errs field.ErrorList
	if q, err := resource.ParseQuantity(c.ContainerLogMaxSize); err != nil || q.Sign() <= 0 {
		errs = append(errs, field.Invalid(field.NewPath("containerLogMaxSize"), c.ContainerLogMaxSize, "must be a positive quantity such as 10Mi"))
	}
	if n := deref(c.ContainerLogMaxFiles); n < 2 {
		errs = append(errs, field.Invalid(field.NewPath("containerLogMaxFiles"), n, "must be greater than 1"))
	}
	if n := deref(c.ContainerLogMaxWorkers); n < 1 {
		errs = append(errs, field.Invalid(field.NewPath("containerLogMaxWorkers"), n, "must be greater than or equal to 1"))
	}
	if d := c.ContainerLogMonitorInterval.Duration; d < minContainerLogMonitorInterval {
		errs = append(errs, field.Invalid(field.NewPath("containerLogMonitorInterval"), d.String(), "must be greater than or equal to 3s"))
	}
	if c.MaxPods < 0 {
		errs = append(errs, field.Invalid(field.NewPath("maxPods"), c.MaxPods, "must be greater than or equal to 0"))
	}
	if n := deref(c.OOMScoreAdj); n < -1000 || n > 1000 {
		errs = append(errs, field.Invalid(field.NewPath("oomScoreAdj"), n, "must be between -1000 and 1000, inclusive"))
	}
	if n := deref(c.PodPidsLimit); n < -1 {
		errs = append(errs, field.Invalid(field.NewPath("podPidsLimit"), n, "must be -1 (unlimited) or greater"))
	}
	if n := deref(c.RegistryPullQPS); n < 0 {
		errs = append(errs, field.Invalid(field.NewPath("registryPullQPS"), n, "must be greater than or equal to 0"))
	}
	if c.RegistryBurst < 0 {
		errs = append(errs, field.Invalid(field.NewPath("registryBurst"), c.RegistryBurst, "must be greater than or equal to 0"))
	}
	if n := c.MaxParallelImagePulls; n != nil && *n < 1 {
		errs = append(errs, field.Invalid(field.NewPath("maxParallelImagePulls"), *n, "must be a positive number"))
	} else if n != nil && *n > 1 && deref(c.SerializeImagePulls) {
		errs = append(errs, field.Invalid(field.NewPath("maxParallelImagePulls"), *n,
			"cannot be larger than 1 unless SerializeImagePulls (--serialize-image-pulls) is set to false"))
	}
	return append(errs, c.validateClientLimits()...)
}

// validateClientLimits checks the API client limits with the kubelet's
// wording ("invalid configuration: kubeAPIQPS (--kube-api-qps) -1 must not
// be a negative number").
func (c *Config) validateClientLimits() field.ErrorList {
	var errs field.ErrorList
	for _, l := range []struct {
		name string
		n    int32
	}{
		{"kubeAPIQPS", deref(c.KubeAPIQPS)},
		{"kubeAPIBurst", c.KubeAPIBurst},
		{"eventRecordQPS", deref(c.EventRecordQPS)},
		{"eventBurst", c.EventBurst},
	} {
		if l.n < 0 {
			errs = append(errs, field.Invalid(field.NewPath(l.name), l.n, "must not be a negative number"))
		}
	}
	return errs
}

func (c *Config) validateDNS() field.ErrorList {
	var errs field.ErrorList
	for i, ip := range c.ClusterDNS {
		errs = append(errs, validateIP(field.NewPath("clusterDNS").Index(i), ip)...)
	}
	if c.ClusterDomain != "" {
		for _, msg := range utilvalidation.IsDNS1123Subdomain(strings.TrimSuffix(c.ClusterDomain, ".")) {
			errs = append(errs, field.Invalid(field.NewPath("clusterDomain"), c.ClusterDomain, msg))
		}
	}
	return errs
}

func (c *Config) warnings() []string {
	var w []string
	if c.StaticPodPath == "" {
		w = append(w, "staticPodPath is empty: no static pods will be run")
	}
	if len(c.ClusterDNS) > 0 && c.ClusterDomain == "" {
		w = append(w, "clusterDNS is set but clusterDomain is empty: pods get no cluster search domains")
	}
	if deref(c.Authentication.Anonymous.Enabled) && c.Authorization.Mode == AuthorizationModeAlwaysAllow && !isLoopback(c.Address) {
		w = append(w, fmt.Sprintf("authentication.anonymous.enabled with authorization.mode AlwaysAllow: anyone who reaches %s port %d can read logs and run commands in containers",
			c.Address, deref(c.Port)))
	}
	if c.ResolverConfig != nil && *c.ResolverConfig == "" {
		w = append(w, "resolvConf is empty: pods with dnsPolicy Default get no nameservers from the host")
	}
	return append(w, c.notEnforced()...)
}

// notEnforced names settings this version accepts but does not act on yet,
// so that a reused kubelet config does not silently do less than it says.
func (c *Config) notEnforced() []string {
	// None left: podPidsLimit is the pod cgroup's pids.max (pkg/podcgroup).
	return nil
}

// reservable are the resources systemReserved and kubeReserved may name.
var reservable = []string{"cpu", "memory", "ephemeral-storage", "pid"}

func (c *Config) validateNode() field.ErrorList {
	var errs field.ErrorList
	for i, t := range c.RegisterWithTaints {
		p := field.NewPath("registerWithTaints").Index(i)
		for _, msg := range utilvalidation.IsQualifiedName(t.Key) {
			errs = append(errs, field.Invalid(p.Child("key"), t.Key, msg))
		}
		if t.Value != "" {
			for _, msg := range utilvalidation.IsValidLabelValue(t.Value) {
				errs = append(errs, field.Invalid(p.Child("value"), t.Value, msg))
			}
		}
		switch t.Effect {
		case v1.TaintEffectNoSchedule, v1.TaintEffectPreferNoSchedule, v1.TaintEffectNoExecute:
		default:
			errs = append(errs, field.NotSupported(p.Child("effect"), t.Effect,
				[]string{string(v1.TaintEffectNoSchedule), string(v1.TaintEffectPreferNoSchedule), string(v1.TaintEffectNoExecute)}))
		}
	}
	for name, m := range map[string]map[string]string{"systemReserved": c.SystemReserved, "kubeReserved": c.KubeReserved} {
		for k, v := range m {
			p := field.NewPath(name).Key(k)
			if !slices.Contains(reservable, k) {
				errs = append(errs, field.NotSupported(p, k, reservable))
			} else if q, err := resource.ParseQuantity(v); err != nil || q.Sign() < 0 {
				errs = append(errs, field.Invalid(p, v, "must be a non-negative quantity"))
			}
		}
	}
	return errs
}

// The enforceNodeAllocatable keys (the kubelet's kubetypes constants).
const (
	EnforcePods                     = "pods"
	EnforceSystemReserved           = "system-reserved"
	EnforceSystemReservedCompressed = "system-reserved-compressible"
	EnforceKubeReserved             = "kube-reserved"
	EnforceKubeReservedCompressed   = "kube-reserved-compressible"
	EnforceNone                     = "none"
)

// validateEnforcement checks enforceNodeAllocatable with the kubelet's
// rules and wording (its validation.go, after the "invalid
// configuration: " prefix).
func (c *Config) validateEnforcement() field.ErrorList {
	p := field.NewPath("enforceNodeAllocatable")
	var errs field.ErrorList
	has := func(k string) bool { return slices.Contains(c.EnforceNodeAllocatable, k) }
	for _, pair := range [][2]string{{EnforceSystemReserved, EnforceSystemReservedCompressed}, {EnforceKubeReserved, EnforceKubeReservedCompressed}} {
		if has(pair[0]) && has(pair[1]) {
			errs = append(errs, field.Invalid(p, c.EnforceNodeAllocatable,
				fmt.Sprintf("both %q and %q cannot be specified together in enforceNodeAllocatable (--enforce-node-allocatable)", pair[0], pair[1])))
		}
	}
	seen := map[string]bool{}
	for i, val := range c.EnforceNodeAllocatable {
		if seen[val] {
			errs = append(errs, field.Invalid(p.Index(i), val, fmt.Sprintf("duplicated enforcements %q in enforceNodeAllocatable (--enforce-node-allocatable)", val)))
			continue
		}
		seen[val] = true
		msg, check := c.enforcementError(val)
		if msg != "" {
			errs = append(errs, field.Invalid(p.Index(i), val, msg))
		}
		if check && !deref(c.CgroupsPerQOS) {
			errs = append(errs, field.Invalid(p.Index(i), val,
				fmt.Sprintf("cgroupsPerQOS (--cgroups-per-qos) must be set to true when %q contained in enforceNodeAllocatable (--enforce-node-allocatable)", val)))
		}
	}
	return errs
}

// enforcementError is what is wrong with one enforceNodeAllocatable key,
// and whether it needs cgroupsPerQOS.
func (c *Config) enforcementError(val string) (string, bool) {
	switch val {
	case EnforcePods:
	case EnforceSystemReserved, EnforceSystemReservedCompressed:
		if c.SystemReservedCgroup == "" {
			return fmt.Sprintf("systemReservedCgroup (--system-reserved-cgroup) must be specified when %q or %q included in enforceNodeAllocatable (--enforce-node-allocatable)",
				EnforceSystemReserved, EnforceSystemReservedCompressed), true
		}
	case EnforceKubeReserved, EnforceKubeReservedCompressed:
		if c.KubeReservedCgroup == "" {
			return fmt.Sprintf("kubeReservedCgroup (--kube-reserved-cgroup) must be specified when %q or %q included in enforceNodeAllocatable (--enforce-node-allocatable)",
				EnforceKubeReserved, EnforceKubeReservedCompressed), true
		}
	case EnforceNone:
		if len(c.EnforceNodeAllocatable) > 1 {
			return fmt.Sprintf("enforceNodeAllocatable (--enforce-node-allocatable) may not contain additional enforcements when %q is specified", EnforceNone), false
		}
		return "", false
	default:
		return fmt.Sprintf("option %q specified for enforceNodeAllocatable (--enforce-node-allocatable). Valid options are %q, %q, %q, %q, %q or %q",
			val, EnforcePods, EnforceSystemReserved, EnforceSystemReservedCompressed, EnforceKubeReserved, EnforceKubeReservedCompressed, EnforceNone), false
	}
	return "", true
}

// validateSysctls checks allowedUnsafeSysctls as the kubelet's allowlist
// does when it starts (it refuses to start on a bad entry).
func (c *Config) validateSysctls() field.ErrorList {
	var errs field.ErrorList
	for i, s := range c.AllowedUnsafeSysctls {
		if err := sysctl.ValidatePattern(s); err != nil {
			errs = append(errs, field.Invalid(field.NewPath("allowedUnsafeSysctls").Index(i), s, err.Error()))
		}
	}
	return errs
}

func validateIP(p *field.Path, s string) field.ErrorList {
	if net.ParseIP(s) == nil {
		return field.ErrorList{field.Invalid(p, s, "must be a valid IP address")}
	}
	return nil
}

// validateEndpoint accepts "unix:///abs/path" and, like the kubelet (with a
// deprecation warning there), a bare absolute socket path.
func validateEndpoint(p *field.Path, ep string, required bool) field.ErrorList {
	switch {
	case ep == "":
		if required {
			return field.ErrorList{field.Required(p, "a CRI endpoint such as "+DefaultContainerRuntimeEndpoint)}
		}
		return nil
	case strings.HasPrefix(ep, "unix://") && filepath.IsAbs(strings.TrimPrefix(ep, "unix://")),
		filepath.IsAbs(ep):
		return nil
	}
	return field.ErrorList{field.Invalid(p, ep, "must be unix:// followed by an absolute socket path")}
}

func sameHost(a, b string) bool {
	ia, ib := net.ParseIP(a), net.ParseIP(b)
	return ia != nil && ib != nil && (ia.Equal(ib) || ia.IsUnspecified() || ib.IsUnspecified())
}

func isLoopback(s string) bool {
	ip := net.ParseIP(s)
	return ip != nil && ip.IsLoopback()
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
