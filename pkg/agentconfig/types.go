package agentconfig

import (
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	tracingapi "k8s.io/component-base/tracing/api/v1"

	"github.com/nodeagent/nodeagent/pkg/eviction"
)

// The only apiVersion and kind accepted in a config file.
const (
	APIVersion = "kubelet.config.k8s.io/v1beta1"
	Kind       = "KubeletConfiguration"
)

// Config is the subset of the kubelet's KubeletConfiguration
// (kubelet.config.k8s.io/v1beta1) that nodeagent supports. Field names,
// JSON/YAML tags and value formats are upstream's; defaults are listed per
// field (see SetDefaults) and differ from upstream where marked.
type Config struct {
	metav1.TypeMeta `json:",inline"`

	// StaticPodPath is the directory of static pod manifests. Default: "" (none).
	StaticPodPath string `json:"staticPodPath,omitempty"`
	// SyncFrequency is the max period between pod syncs. Default: 1m.
	SyncFrequency metav1.Duration `json:"syncFrequency,omitempty"`
	// ConfigMapAndSecretChangeDetectionStrategy is how the config maps and
	// secrets of the node's pods are kept: Watch (one watch per referenced
	// object), Cache (a TTL cache) or Get (a GET per read). Default: Watch.
	ConfigMapAndSecretChangeDetectionStrategy string `json:"configMapAndSecretChangeDetectionStrategy,omitempty"`
	// FileCheckFrequency is the period of full re-reads of StaticPodPath. Default: 20s.
	FileCheckFrequency metav1.Duration `json:"fileCheckFrequency,omitempty"`
	// Address is the IP the node API server (Port) binds to. Default:
	// "0.0.0.0". The read-only server binds to it only when it is a
	// loopback address, else to 127.0.0.1 (see ReadOnlyAddress): nodeagent
	// never exposes its unauthenticated server to the network.
	Address string `json:"address,omitempty"`
	// Port is the authenticated HTTPS node API server's port (the kubelet's
	// /pods, /containerLogs, /exec, ...). Default: 10250. The server runs
	// when enableServer is true and the agent joined an API server, or,
	// standalone, when authorization.mode is AlwaysAllow.
	Port *int32 `json:"port,omitempty"`
	// TLSCertFile and TLSPrivateKeyFile are the node API server's serving
	// certificate and key. Default: "" (a self-signed pair generated once
	// in <root-dir>/pki, as the kubelet does).
	TLSCertFile       string `json:"tlsCertFile,omitempty"`
	TLSPrivateKeyFile string `json:"tlsPrivateKeyFile,omitempty"`
	// ServerTLSBootstrap requests the node API server's certificate from
	// the cluster (a kubernetes.io/kubelet-serving CertificateSigningRequest,
	// renewed before it expires) instead of a self-signed one; ignored when
	// tlsCertFile is set, and standalone. Default: false, as upstream's
	// (unset until SetModeDefaults; `nodeagent server` sets it for its own
	// agent: its controllers approve and sign these requests, so its API
	// server can verify kubelets). The kubelet's flag:
	// --rotate-server-certificates.
	ServerTLSBootstrap *bool `json:"serverTLSBootstrap,omitempty"`
	// RotateCertificates renews the API client certificate (the
	// kubeconfig's, kept in --cert-dir as kubelet-client-current.pem)
	// through kubernetes.io/kube-apiserver-client-kubelet
	// CertificateSigningRequests at 70-90% of its life, as the kubelet's;
	// the API clients pick up the new certificate without a restart.
	// Default: false, as upstream.
	RotateCertificates bool `json:"rotateCertificates,omitempty"`
	// Authentication and Authorization configure the node API server's
	// auth, with upstream's v1beta1 defaults.
	Authentication Authentication `json:"authentication"`
	Authorization  Authorization  `json:"authorization"`
	// ReadOnlyPort is the unauthenticated read-only server's port; 0 disables
	// it. Default: unset, resolved by SetModeDefaults to 0 when joined to an
	// API server (upstream v1beta1 default) and 10255 standalone.
	ReadOnlyPort *int32 `json:"readOnlyPort,omitempty"`
	// HealthzPort is the healthz server's port; 0 disables it. Default: 10248.
	HealthzPort *int32 `json:"healthzPort,omitempty"`
	// HealthzBindAddress is the healthz server's IP. Default: "127.0.0.1".
	HealthzBindAddress string `json:"healthzBindAddress,omitempty"`
	// ContainerRuntimeEndpoint is the CRI runtime endpoint.
	// Default: "unix:///run/containerd/containerd.sock".
	ContainerRuntimeEndpoint string `json:"containerRuntimeEndpoint"`
	// ImageServiceEndpoint is the CRI image endpoint; "" means
	// ContainerRuntimeEndpoint (see ImageEndpoint). Default: "".
	ImageServiceEndpoint string `json:"imageServiceEndpoint,omitempty"`
	// RuntimeRequestTimeout bounds CRI requests (except long-running ones). Default: 2m.
	RuntimeRequestTimeout metav1.Duration `json:"runtimeRequestTimeout,omitempty"`
	// CgroupRoot is the root cgroup for pods. Default: "" (runtime's default).
	CgroupRoot string `json:"cgroupRoot,omitempty"`
	// CgroupsPerQOS enables the QoS cgroup hierarchy. Default: true.
	CgroupsPerQOS *bool `json:"cgroupsPerQOS,omitempty"`
	// LocalStorageCapacityIsolation: the node reports ephemeral-storage
	// capacity and allocatable, and the eviction manager enforces emptyDir
	// sizeLimit and ephemeral-storage limits. false (for nodes whose root
	// filesystem cannot be measured, upstream's rootless case) reports no
	// ephemeral-storage, so pods requesting it do not fit. Default: true.
	LocalStorageCapacityIsolation *bool `json:"localStorageCapacityIsolation,omitempty"`
	// CgroupDriver is the cgroup driver; only "cgroupfs" is supported. Default: "cgroupfs".
	CgroupDriver string `json:"cgroupDriver,omitempty"`
	// PodLogsDir is where container logs are written. Default: "/var/log/pods".
	PodLogsDir string `json:"podLogsDir,omitempty"`
	// ContainerLogMaxSize is a quantity, e.g. "10Mi". Default: "10Mi".
	ContainerLogMaxSize string `json:"containerLogMaxSize,omitempty"`
	// ContainerLogMaxFiles is the number of log files per container (>= 2). Default: 5.
	ContainerLogMaxFiles *int32 `json:"containerLogMaxFiles,omitempty"`
	// ContainerLogMaxWorkers is the number of concurrent log rotations (>= 1). Default: 1.
	ContainerLogMaxWorkers *int32 `json:"containerLogMaxWorkers,omitempty"`
	// ContainerLogMonitorInterval is the period of the log size check (>= 3s). Default: 10s.
	ContainerLogMonitorInterval metav1.Duration `json:"containerLogMonitorInterval,omitempty"`
	// MaxPods is the maximum number of pods. Default: 110.
	MaxPods int32 `json:"maxPods,omitempty"`
	// OOMScoreAdj is the agent process's oom_score_adj, in [-1000, 1000].
	// Default: -999 (upstream's), so that the kernel kills pods before it.
	OOMScoreAdj *int32 `json:"oomScoreAdj,omitempty"`
	// SerializeImagePulls pulls one image at a time. Default: true, unless
	// MaxParallelImagePulls is 2 or more.
	SerializeImagePulls *bool `json:"serializeImagePulls,omitempty"`
	// MaxParallelImagePulls bounds the pulls at once when they are not
	// serialized. Default: none (no bound).
	MaxParallelImagePulls *int32 `json:"maxParallelImagePulls,omitempty"`
	// ImageGCHighThresholdPercent: at or above this use of the image
	// filesystem unused images are removed, least recently used first,
	// down to ImageGCLowThresholdPercent (0-100, low < high; a high of 100
	// with no ImageMaximumGCAge turns image GC off). Default: 85 and 80.
	ImageGCHighThresholdPercent *int32 `json:"imageGCHighThresholdPercent,omitempty"`
	ImageGCLowThresholdPercent  *int32 `json:"imageGCLowThresholdPercent,omitempty"`
	// ImageMinimumGCAge: younger images are never removed. Default: 2m.
	ImageMinimumGCAge metav1.Duration `json:"imageMinimumGCAge,omitempty"`
	// ImageMaximumGCAge: unused images not used for longer are removed
	// whatever the use (0: off). Default: 0.
	ImageMaximumGCAge metav1.Duration `json:"imageMaximumGCAge,omitempty"`
	// NodeStatusMaxImages caps the Node status images, largest first (-1:
	// no cap). Default: 50.
	NodeStatusMaxImages *int32 `json:"nodeStatusMaxImages,omitempty"`
	// ClusterDNS lists DNS server IPs given to pods. Default: none.
	ClusterDNS []string `json:"clusterDNS,omitempty"`
	// ClusterDomain is the cluster's DNS domain. Default: "".
	ClusterDomain string `json:"clusterDomain,omitempty"`
	// ResolverConfig is the resolv.conf used as the base for pod DNS; ""
	// disables it. Default: "/etc/resolv.conf".
	ResolverConfig *string `json:"resolvConf,omitempty"`
	// PodPidsLimit is the max number of processes per pod; -1 is unlimited. Default: -1.
	PodPidsLimit *int64 `json:"podPidsLimit,omitempty"`
	// SeccompDefault makes RuntimeDefault the seccomp profile of every
	// container whose pod and container set none. Default: false.
	SeccompDefault *bool `json:"seccompDefault,omitempty"`
	// RegistryPullQPS limits image pulls per second; 0 is unlimited. Default: 5.
	RegistryPullQPS *int32 `json:"registryPullQPS,omitempty"`
	// RegistryBurst is the pull burst when RegistryPullQPS > 0. Default: 10.
	RegistryBurst int32 `json:"registryBurst,omitempty"`
	// KubeAPIQPS and KubeAPIBurst limit the agent's requests to the API
	// server: the client of its watches and reads, and, with a limiter of
	// its own, the pod status updates. 0 is client-go's default (5 and 10),
	// as for the kubelet. Default: 50 and 100.
	KubeAPIQPS   *int32 `json:"kubeAPIQPS,omitempty"`
	KubeAPIBurst int32  `json:"kubeAPIBurst,omitempty"`
	// EventRecordQPS and EventBurst limit the events the agent records,
	// on a client of their own (the kubelet's event client). As the
	// kubelet's, 0 is client-go's default (5 and 10), not "no limit" as
	// upstream's field documentation says (kubernetes issue 117101).
	// Default: 50 and 100.
	EventRecordQPS *int32 `json:"eventRecordQPS,omitempty"`
	EventBurst     int32  `json:"eventBurst,omitempty"`
	// EnableServer enables the authenticated node API server (Port); the
	// read-only and healthz servers have their own ports. Default: true.
	EnableServer *bool `json:"enableServer,omitempty"`
	// EnableProfilingHandler serves Go's profiles on the node API under
	// /debug/pprof/ (authorized as nodes/proxy, as upstream). Default: true.
	EnableProfilingHandler *bool `json:"enableProfilingHandler,omitempty"`
	// EnableContentionProfiling records blocking events for the block
	// profile (runtime.SetBlockProfileRate(1)); only with the profiling
	// handler, as upstream. Default: false.
	EnableContentionProfiling bool `json:"enableContentionProfiling,omitempty"`
	// VolumeStatsAggPeriod is how long a volume's measured disk usage
	// (the summary's and the eviction manager's) is reused before it is
	// measured again; negative: volume usage is not measured. Default: 1m
	// (0 is the default, as upstream's).
	VolumeStatsAggPeriod metav1.Duration `json:"volumeStatsAggPeriod,omitempty"`
	// NodeStatusUpdateFrequency is the node status report period. Default: 10s.
	NodeStatusUpdateFrequency metav1.Duration `json:"nodeStatusUpdateFrequency,omitempty"`
	// RegisterWithTaints are set on the Node when the agent registers it
	// (joined mode); node admission also checks their NoExecute ones. Default: none.
	RegisterWithTaints []v1.Taint `json:"registerWithTaints,omitempty"`
	// SystemReserved and KubeReserved (cpu, memory, ephemeral-storage, pid
	// quantities) are held back from the node's allocatable. Default: none.
	SystemReserved map[string]string `json:"systemReserved,omitempty"`
	KubeReserved   map[string]string `json:"kubeReserved,omitempty"`
	// EnforceNodeAllocatable lists what the agent limits with cgroups:
	// "pods" (the kubepods cgroup gets capacity minus the reservations),
	// "system-reserved" / "kube-reserved" (SystemReservedCgroup /
	// KubeReservedCgroup get their reservation), their "-compressible"
	// forms (cpu only), or "none" alone. Default: ["pods"].
	EnforceNodeAllocatable []string `json:"enforceNodeAllocatable,omitempty"`
	// SystemReservedCgroup and KubeReservedCgroup are existing cgroups
	// (absolute cgroupfs names) the reservations are enforced on.
	// Default: "".
	SystemReservedCgroup string `json:"systemReservedCgroup,omitempty"`
	KubeReservedCgroup   string `json:"kubeReservedCgroup,omitempty"`
	// AllowedUnsafeSysctls are the sysctls, or prefixes ending in '*'
	// ("net.core.*"), pods may set beyond the safe set; each must be
	// known to be namespaced (net.*, kernel.shm*, kernel.msg*, kernel.sem,
	// fs.mqueue.*, ...). Pods asking for others are rejected at admission
	// (SysctlForbidden). Default: none.
	AllowedUnsafeSysctls []string `json:"allowedUnsafeSysctls,omitempty"`
	// UserNamespaces configures the user namespaces of pods with
	// hostUsers: false. Default: idsPerPod 65536.
	UserNamespaces *UserNamespaces `json:"userNamespaces,omitempty"`
	// Tracing is the kubelet's tracing configuration (component-base's
	// TracingConfiguration): when set, each pod's start steps are exported
	// as OpenTelemetry spans over OTLP gRPC to endpoint (default
	// localhost:4317), sampled at samplingRatePerMillion (default 0:
	// none). Default: unset (no export).
	Tracing *tracingapi.TracingConfiguration `json:"tracing,omitempty"`

	// The eviction manager's settings, inline under the kubelet's names
	// and with its defaults (see pkg/eviction Config): evictionHard
	// (default memory.available<100Mi, nodefs.available<10%,
	// nodefs.inodesFree<5%, imagefs.available<15%; a set map replaces the
	// default unless mergeDefaultEvictionSettings), evictionSoft with
	// evictionSoftGracePeriod, evictionMinimumReclaim,
	// evictionPressureTransitionPeriod (default 5m) and
	// evictionMaxPodGracePeriod (a soft eviction's grace, default 0).
	eviction.Config
}

// UserNamespaces is the kubelet's userNamespaces section.
type UserNamespaces struct {
	// IDsPerPod is how many UIDs and GIDs each pod's user namespace maps:
	// a multiple of 65536, less than 2^32. Changing it may require
	// recreating every pod with hostUsers: false. Default: 65536.
	IDsPerPod *int64 `json:"idsPerPod,omitempty"`
}

// IDsPerPod is userNamespaces.idsPerPod, or its default (as upstream,
// the default is applied where it is used, not written into the config).
func (c *Config) IDsPerPod() int64 {
	if c.UserNamespaces != nil && c.UserNamespaces.IDsPerPod != nil {
		return *c.UserNamespaces.IDsPerPod
	}
	return DefaultIDsPerPod
}

// ImageEndpoint returns ImageServiceEndpoint, or ContainerRuntimeEndpoint
// when it is empty (upstream semantics).
func (c *Config) ImageEndpoint() string {
	if c.ImageServiceEndpoint != "" {
		return c.ImageServiceEndpoint
	}
	return c.ContainerRuntimeEndpoint
}

// ReadOnlyAddress is the IP the read-only server binds to: Address when
// it is a loopback address, else 127.0.0.1, since that server has no
// authentication.
func (c *Config) ReadOnlyAddress() string {
	if isLoopback(c.Address) {
		return c.Address
	}
	return DefaultReadOnlyAddress
}

// Flags are the agent settings that, as in the kubelet, exist only as
// command-line flags and never in the config file.
type Flags struct {
	// RootDir holds the agent's state. Default: /var/lib/nodeagent.
	RootDir string
	// HostnameOverride replaces the hostname as the node name.
	HostnameOverride string
	// NodeIP is the node's IP address.
	NodeIP string
	// Kubeconfig is the path of a kubeconfig for the API server ("" = standalone).
	Kubeconfig string
	// BootstrapKubeconfig is the kubelet's --bootstrap-kubeconfig: when
	// Kubeconfig is missing or its client certificate is invalid, a node
	// client certificate is requested with this kubeconfig's credential (a
	// bootstrap token) and Kubeconfig is written to use it.
	BootstrapKubeconfig string
	// CertDir holds the client and serving pairs (--cert-dir). Default:
	// <root-dir>/pki.
	CertDir string
	// ConfigFile is the path of the KubeletConfiguration file (--config).
	ConfigFile string
	// ConfigDir is a directory of KubeletConfiguration drop-ins (--config-dir).
	ConfigDir string
	// NodeLabels are added to the Node when it registers (--node-labels).
	NodeLabels map[string]string
	// NetworkPlugin "kubenet" makes the agent own the node's pod network,
	// as the kubelet's old --network-plugin=kubenet: a bridge CNI
	// configuration for the Node's spec.podCIDRs written to CNIConfDir,
	// routes to the other nodes' pod CIDRs, and the NetworkUnavailable
	// condition. Default: "" (the runtime's CNI configuration is someone
	// else's, as with the kubelet today).
	NetworkPlugin string
	// CNIConfDir and CNIBinDirs are where the CNI configuration is written
	// and the plugins are looked up (the runtime's conf_dir and bin_dir).
	CNIConfDir string
	CNIBinDirs []string
	// NetworkPluginMTU is the bridge's MTU (0: the plugin's default).
	NetworkPluginMTU int
	// ServiceProxy runs the service proxy (kube-proxy's job, nftables
	// mode) in the agent: ClusterIPs and NodePorts of Services reach their
	// ready endpoints. Default: false (a cluster may run kube-proxy).
	ServiceProxy bool
	// ClusterCIDR is the pods' range: service traffic from outside it is
	// masqueraded (kube-proxy's --cluster-cidr; empty: all of it), and
	// kubenet routes to no other node's pod CIDR outside it.
	ClusterCIDR string
	// ContainerGCPeriod is how often the container GC runs: the kubelet's
	// ContainerGCPeriod constant (a minute), which no kubelet flag or
	// field changes; the hidden --container-gc-period is for tests only.
	// 0: a minute.
	ContainerGCPeriod time.Duration
	// ImageGCPeriod is how often image garbage collection runs: the
	// kubelet's ImageGCPeriod constant (imagegc.Period, 5 minutes), which no
	// kubelet flag or field changes; the hidden --image-gc-period exists so
	// that tests need not wait that long. Must be greater than 0.
	ImageGCPeriod time.Duration
}

// NetworkPluginKubenet is the one network plugin the agent runs itself.
const NetworkPluginKubenet = "kubenet"

// ContainerLogMaxBytes is ContainerLogMaxSize in bytes; call it on a
// validated Config (an unparsable size gives 0).
func (c *Config) ContainerLogMaxBytes() int64 {
	q, err := resource.ParseQuantity(c.ContainerLogMaxSize)
	if err != nil {
		return 0
	}
	return q.Value()
}

// Reserved sums SystemReserved and KubeReserved; call it on a validated
// Config (unparsable quantities are skipped).
func (c *Config) Reserved() v1.ResourceList {
	out := v1.ResourceList{}
	for _, m := range []map[string]string{c.SystemReserved, c.KubeReserved} {
		for k, v := range m {
			q, err := resource.ParseQuantity(v)
			if err != nil {
				continue
			}
			sum := out[v1.ResourceName(k)]
			sum.Add(q)
			out[v1.ResourceName(k)] = sum
		}
	}
	return out
}
