package agentconfig

import (
	"github.com/spf13/pflag"
	cliflag "k8s.io/component-base/cli/flag"
)

// deprecatedFlag is what the kubelet says of its flags that have a
// config file field.
const deprecatedFlag = " (DEPRECATED: This parameter should be set via the config file specified by the Kubelet's --config flag. See https://kubernetes.io/docs/tasks/administer-cluster/kubelet-config-file/ for more information.)"

// addResourceFlags registers the kubelet's deprecated flags of node
// resource management: eviction, node allocatable, image GC. Their
// syntax is the kubelet's: thresholds as signal<quantity pairs, the
// rest as key=value pairs; a map flag given replaces the file's map (the
// kubelet's MapStringString: the first value set clears the map, more
// occurrences of the flag add to it).
func (c *Config) addResourceFlags(fs *pflag.FlagSet) {
	fs.Var(cliflag.NewLangleSeparatedMapStringString(&c.EvictionHard), "eviction-hard",
		"A set of eviction thresholds (e.g. memory.available<1Gi) that if met would trigger a pod eviction (config: evictionHard)."+deprecatedFlag)
	fs.Var(cliflag.NewLangleSeparatedMapStringString(&c.EvictionSoft), "eviction-soft",
		"A set of eviction thresholds (e.g. memory.available<1.5Gi) that if met over a corresponding grace period would trigger a pod eviction (config: evictionSoft)."+deprecatedFlag)
	fs.Var(cliflag.NewMapStringString(&c.EvictionSoftGracePeriod), "eviction-soft-grace-period",
		"A set of eviction grace periods (e.g. memory.available=1m30s) that correspond to how long a soft eviction threshold must hold before triggering a pod eviction (config: evictionSoftGracePeriod)."+deprecatedFlag)
	fs.Var(cliflag.NewMapStringString(&c.EvictionMinimumReclaim), "eviction-minimum-reclaim",
		"A set of minimum reclaims (e.g. imagefs.available=2Gi) that describes the minimum amount of resource the kubelet will reclaim when performing a pod eviction if that resource is under pressure (config: evictionMinimumReclaim)."+deprecatedFlag)
	fs.DurationVar(&c.EvictionPressureTransitionPeriod.Duration, "eviction-pressure-transition-period", c.EvictionPressureTransitionPeriod.Duration,
		"Duration for which the kubelet has to wait before transitioning out of an eviction pressure condition (config: evictionPressureTransitionPeriod)."+deprecatedFlag)
	fs.Int32Var(&c.EvictionMaxPodGracePeriod, "eviction-max-pod-grace-period", c.EvictionMaxPodGracePeriod,
		"Maximum allowed grace period (in seconds) to use when terminating pods in response to a soft eviction threshold being met. If negative, defer to pod specified value (config: evictionMaxPodGracePeriod)."+deprecatedFlag)
	fs.StringSliceVar(&c.EnforceNodeAllocatable, "enforce-node-allocatable", c.EnforceNodeAllocatable,
		"A comma separated list of levels of node allocatable enforcement to be enforced by kubelet. Acceptable options are 'none', 'pods', 'system-reserved', and 'kube-reserved'. If the latter two options are specified, '--system-reserved-cgroup' and '--kube-reserved-cgroup' must also be set, respectively. If 'none' is specified, no additional options should be set (config: enforceNodeAllocatable)."+deprecatedFlag)
	fs.Var(cliflag.NewMapStringString(&c.SystemReserved), "system-reserved",
		"A set of ResourceName=ResourceQuantity (e.g. cpu=200m,memory=500Mi,ephemeral-storage=1Gi,pid=1000) pairs that describe resources reserved for non-kubernetes components (config: systemReserved)."+deprecatedFlag)
	fs.Var(cliflag.NewMapStringString(&c.KubeReserved), "kube-reserved",
		"A set of ResourceName=ResourceQuantity (e.g. cpu=200m,memory=500Mi,ephemeral-storage=1Gi,pid=1000) pairs that describe resources reserved for kubernetes system components (config: kubeReserved)."+deprecatedFlag)
	fs.StringVar(&c.SystemReservedCgroup, "system-reserved-cgroup", c.SystemReservedCgroup,
		"Absolute name of the top level cgroup that is used to manage non-kubernetes components for which compute resources were reserved via '--system-reserved' flag. Ex. '/system-reserved' (config: systemReservedCgroup)."+deprecatedFlag)
	fs.StringVar(&c.KubeReservedCgroup, "kube-reserved-cgroup", c.KubeReservedCgroup,
		"Absolute name of the top level cgroup that is used to manage kubernetes components for which compute resources were reserved via '--kube-reserved' flag. Ex. '/kube-reserved' (config: kubeReservedCgroup)."+deprecatedFlag)
	fs.Int32Var(c.ImageGCHighThresholdPercent, "image-gc-high-threshold", *c.ImageGCHighThresholdPercent,
		"The percent of disk usage after which image garbage collection is always run. Values must be within the range [0, 100], To disable image garbage collection, set to 100 (config: imageGCHighThresholdPercent)."+deprecatedFlag)
	fs.Int32Var(c.ImageGCLowThresholdPercent, "image-gc-low-threshold", *c.ImageGCLowThresholdPercent,
		"The percent of disk usage before which image garbage collection is never run. Lowest disk usage to garbage collect to. Values must be within the range [0, 100] and should not be larger than that of --image-gc-high-threshold (config: imageGCLowThresholdPercent)."+deprecatedFlag)
}
