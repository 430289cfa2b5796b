package agentconfig

import (
	"errors"
	"fmt"
	"net"
	"strconv"

	"github.com/spf13/pflag"

	"github.com/nodeagent/nodeagent/pkg/imagegc"
)

// AddFlags registers the kubelet-named flags bound to c's fields, using c's
// current values as flag defaults. It applies SetDefaults to c first.
func (c *Config) AddFlags(fs *pflag.FlagSet) {
	c.SetDefaults()
	fs.StringVar(&c.StaticPodPath, "pod-manifest-path", c.StaticPodPath, "Directory of static pod manifests (config: staticPodPath).")
	fs.StringVar(&c.ContainerRuntimeEndpoint, "container-runtime-endpoint", c.ContainerRuntimeEndpoint, "CRI runtime endpoint (config: containerRuntimeEndpoint).")
	fs.StringVar(&c.ImageServiceEndpoint, "image-service-endpoint", c.ImageServiceEndpoint, "CRI image endpoint; empty means the runtime endpoint (config: imageServiceEndpoint).")
	fs.Var(optionalInt32{&c.ReadOnlyPort}, "read-only-port", "Port of the unauthenticated read-only server, always bound to loopback; 0 disables it (default 0 when joined to an API server, 10255 standalone) (config: readOnlyPort).")
	fs.StringVar(&c.Address, "address", c.Address, "IP address the node API server binds to; the read-only server uses it only if it is a loopback address (config: address).")
	c.addServerFlags(fs)
	c.addResourceFlags(fs)
	fs.Int32Var(c.HealthzPort, "healthz-port", *c.HealthzPort, "Port of the healthz server; 0 disables it (config: healthzPort).")
	fs.StringVar(&c.HealthzBindAddress, "healthz-bind-address", c.HealthzBindAddress, "IP address the healthz server binds to (config: healthzBindAddress).")
	fs.DurationVar(&c.RuntimeRequestTimeout.Duration, "runtime-request-timeout", c.RuntimeRequestTimeout.Duration, "Timeout of CRI requests except long-running ones (config: runtimeRequestTimeout).")
	fs.DurationVar(&c.SyncFrequency.Duration, "sync-frequency", c.SyncFrequency.Duration, "Max period between pod syncs (config: syncFrequency).")
	fs.DurationVar(&c.FileCheckFrequency.Duration, "file-check-frequency", c.FileCheckFrequency.Duration, "Period of full re-reads of the manifest directory (config: fileCheckFrequency).")
	fs.StringVar(&c.CgroupRoot, "cgroup-root", c.CgroupRoot, "Root cgroup for pods (config: cgroupRoot).")
	fs.StringVar(&c.CgroupDriver, "cgroup-driver", c.CgroupDriver, "Cgroup driver; only cgroupfs is supported (config: cgroupDriver).")
	fs.StringSliceVar(&c.ClusterDNS, "cluster-dns", c.ClusterDNS, "Comma-separated DNS server IPs for pods (config: clusterDNS).")
	fs.StringVar(&c.ClusterDomain, "cluster-domain", c.ClusterDomain, "Cluster DNS domain (config: clusterDomain).")
	fs.StringVar(c.ResolverConfig, "resolv-conf", *c.ResolverConfig, "Base resolv.conf for pod DNS; empty disables it (config: resolvConf).")
	fs.Int32Var(&c.MaxPods, "max-pods", c.MaxPods, "Maximum number of pods (config: maxPods).")
	fs.Int32Var(c.OOMScoreAdj, "oom-score-adj", *c.OOMScoreAdj, "The oom_score_adj of the agent's process, in [-1000, 1000] (config: oomScoreAdj).")
	fs.StringSliceVar(&c.AllowedUnsafeSysctls, "allowed-unsafe-sysctls", c.AllowedUnsafeSysctls, "Comma-separated allowlist of unsafe sysctls or unsafe sysctl patterns (ending in *); use these at your own risk (config: allowedUnsafeSysctls).")
	fs.BoolVar(c.SeccompDefault, "seccomp-default", *c.SeccompDefault, "Use RuntimeDefault as the seccomp profile of containers that set none (config: seccompDefault).")
}

// addServerFlags registers the node API server's kubelet flags.
func (c *Config) addServerFlags(fs *pflag.FlagSet) {
	fs.Int32Var(c.Port, "port", *c.Port, "Port of the authenticated HTTPS node API server (config: port).")
	fs.StringVar(&c.TLSCertFile, "tls-cert-file", c.TLSCertFile, "Serving certificate of the node API server; empty generates a self-signed one in <root-dir>/pki (config: tlsCertFile).")
	fs.StringVar(&c.TLSPrivateKeyFile, "tls-private-key-file", c.TLSPrivateKeyFile, "Key of --tls-cert-file (config: tlsPrivateKeyFile).")
	fs.Var(optionalBool{&c.ServerTLSBootstrap}, "rotate-server-certificates", "Request the node API server's certificate from the cluster with a kubernetes.io/kubelet-serving CertificateSigningRequest, and renew it before it expires; the requests must be approved (config: serverTLSBootstrap).")
	fs.Lookup("rotate-server-certificates").NoOptDefVal = "true"
	fs.StringVar(&c.Authentication.X509.ClientCAFile, "client-ca-file", c.Authentication.X509.ClientCAFile, "CA bundle that verifies client certificates (config: authentication.x509.clientCAFile).")
	fs.BoolVar(c.Authentication.Anonymous.Enabled, "anonymous-auth", *c.Authentication.Anonymous.Enabled, "Let unauthenticated requests in as system:anonymous (config: authentication.anonymous.enabled).")
	fs.BoolVar(c.Authentication.Webhook.Enabled, "authentication-token-webhook", *c.Authentication.Webhook.Enabled, "Check bearer tokens with TokenReview (config: authentication.webhook.enabled).")
	fs.StringVar((*string)(&c.Authorization.Mode), "authorization-mode", string(c.Authorization.Mode), "AlwaysAllow or Webhook (config: authorization.mode).")
}

// optionalInt32 is a flag for a *int32 field whose default depends on
// more than the flag set (nil until set).
type optionalInt32 struct{ p **int32 }

func (o optionalInt32) String() string {
	if o.p == nil || *o.p == nil {
		return ""
	}
	return strconv.FormatInt(int64(**o.p), 10)
}

func (o optionalInt32) Set(s string) error {
	n, err := strconv.ParseInt(s, 10, 32)
	if err != nil {
		return err
	}
	v := int32(n)
	*o.p = &v
	return nil
}

func (optionalInt32) Type() string { return "int32" }

// optionalBool is optionalInt32 for a *bool field.
type optionalBool struct{ p **bool }

func (o optionalBool) String() string {
	if o.p == nil || *o.p == nil {
		return ""
	}
	return strconv.FormatBool(**o.p)
}

func (o optionalBool) Set(s string) error {
	v, err := strconv.ParseBool(s)
	if err != nil {
		return err
	}
	*o.p = &v
	return nil
}

func (optionalBool) Type() string { return "bool" }

// AddFlags registers the flag-only settings, using f's current values (or
// their defaults) as flag defaults.
func (f *Flags) AddFlags(fs *pflag.FlagSet) {
	if f.RootDir == "" {
		f.RootDir = DefaultRootDir
	}
	fs.StringVar(&f.RootDir, "root-dir", f.RootDir, "Directory of the agent's state.")
	fs.StringVar(&f.HostnameOverride, "hostname-override", f.HostnameOverride, "Node name to use instead of the hostname.")
	fs.StringVar(&f.NodeIP, "node-ip", f.NodeIP, "IP address of the node.")
	fs.StringVar(&f.Kubeconfig, "kubeconfig", f.Kubeconfig, "Kubeconfig of the API server; empty runs standalone.")
	fs.StringVar(&f.BootstrapKubeconfig, "bootstrap-kubeconfig", f.BootstrapKubeconfig, "Kubeconfig with a bootstrap credential: when the --kubeconfig file is missing or its client certificate is invalid or expired, a node client certificate is requested with it (a CertificateSigningRequest) and --kubeconfig is written to use it.")
	fs.StringVar(&f.CertDir, "cert-dir", f.CertDir, "Directory of the client and serving certificates (default <root-dir>/pki).")
	fs.StringVar(&f.ConfigFile, "config", f.ConfigFile, "KubeletConfiguration file; flags given explicitly override its values.")
	fs.StringVar(&f.ConfigDir, "config-dir", f.ConfigDir, "Directory of KubeletConfiguration drop-ins: its *.conf files, in lexical order, are merged over --config (objects merge, lists replace); flags given explicitly override the result.")
	fs.StringToStringVar(&f.NodeLabels, "node-labels", f.NodeLabels, "Labels added to the Node when it registers (key=value,...).")
	if f.CNIConfDir == "" {
		f.CNIConfDir = DefaultCNIConfDir
	}
	if len(f.CNIBinDirs) == 0 {
		f.CNIBinDirs = DefaultCNIBinDirs
	}
	fs.StringVar(&f.NetworkPlugin, "network-plugin", f.NetworkPlugin, "\"kubenet\": the agent writes a bridge CNI configuration for its Node's spec.podCIDR, routes to the other nodes' pod CIDRs and reports NetworkUnavailable (joined only); empty leaves the runtime's CNI configuration alone.")
	fs.StringVar(&f.CNIConfDir, "cni-conf-dir", f.CNIConfDir, "Directory the runtime reads CNI configurations from (with --network-plugin=kubenet).")
	fs.StringSliceVar(&f.CNIBinDirs, "cni-bin-dir", f.CNIBinDirs, "Comma-separated directories of CNI plugin binaries (with --network-plugin=kubenet).")
	fs.BoolVar(&f.ServiceProxy, "service-proxy", f.ServiceProxy, "Run the service proxy (kube-proxy's nftables mode) in the agent, joined only: Service ClusterIPs and NodePorts reach ready endpoints. Needs the nft binary.")
	fs.StringVar(&f.ClusterCIDR, "cluster-cidr", f.ClusterCIDR, "Range of pod IPs: service traffic from outside it is masqueraded (with --service-proxy; empty: all of it), and kubenet routes only to other nodes' pod CIDRs inside it (with --network-plugin=kubenet).")
	fs.IntVar(&f.NetworkPluginMTU, "network-plugin-mtu", f.NetworkPluginMTU, "MTU of the pod bridge; 0 is the plugin's default (with --network-plugin=kubenet).")
	// Not a kubelet flag: the kubelet's container GC period is a constant.
	fs.DurationVar(&f.ContainerGCPeriod, "container-gc-period", f.ContainerGCPeriod, "How often dead containers and sandboxes are collected (0: the kubelet's minute). For tests.")
	_ = fs.MarkHidden("container-gc-period")
	// Not a kubelet flag either: the kubelet's image GC period is a
	// constant too. For tests, which cannot wait five minutes a collection.
	if f.ImageGCPeriod == 0 {
		f.ImageGCPeriod = imagegc.Period
	}
	fs.DurationVar(&f.ImageGCPeriod, "image-gc-period", f.ImageGCPeriod, "How often unused images are collected (the kubelet's 5m). For tests.")
	_ = fs.MarkHidden("image-gc-period")
}

// Validate checks the flag-only settings.
func (f *Flags) Validate() error {
	if f.RootDir == "" {
		return errors.New("--root-dir must not be empty")
	}
	if f.BootstrapKubeconfig != "" && f.Kubeconfig == "" {
		return errors.New("--bootstrap-kubeconfig needs --kubeconfig: the kubeconfig it writes")
	}
	if f.NodeIP != "" && net.ParseIP(f.NodeIP) == nil {
		return fmt.Errorf("--node-ip: invalid IP address %q", f.NodeIP)
	}
	if f.ClusterCIDR != "" {
		if _, _, err := net.ParseCIDR(f.ClusterCIDR); err != nil {
			return fmt.Errorf("--cluster-cidr: %w", err)
		}
	}
	if f.ContainerGCPeriod < 0 {
		return fmt.Errorf("--container-gc-period: must not be negative, got %s", f.ContainerGCPeriod)
	}
	if f.NetworkPlugin != "" && f.NetworkPlugin != NetworkPluginKubenet {
		return fmt.Errorf("--network-plugin: %q is not supported (only %q, or empty)", f.NetworkPlugin, NetworkPluginKubenet)
	}
	if f.ImageGCPeriod <= 0 {
		return fmt.Errorf("--image-gc-period: must be greater than 0, got %s", f.ImageGCPeriod)
	}
	return nil
}

// Resolve computes the effective settings with the kubelet's precedence:
// explicit flag > drop-ins > config file > default. It registers the Config and Flags
// flags on fs (which may hold other flags too) and parses args; if --config
// names a file or --config-dir a directory, it loads them (LoadFiles) and
// then re-applies only the flags the user set (ApplyFlags) on top. The
// warnings are LoadFiles': the caller logs them. The result is defaulted
// but not validated: call Config.Validate and Flags.Validate.
//
// Callers whose flags are parsed elsewhere (e.g. by cobra) do the same
// steps themselves: Default().AddFlags(fs) and DefaultFlags().AddFlags(fs)
// before parsing, then LoadFiles(--config, --config-dir) and
// ApplyFlags(fs, cfg).
func Resolve(fs *pflag.FlagSet, args []string) (*Config, *Flags, []string, error) {
	cfg, fl := Default(), DefaultFlags()
	cfg.AddFlags(fs)
	fl.AddFlags(fs)
	if err := fs.Parse(args); err != nil {
		return nil, nil, nil, err
	}
	if fl.ConfigFile == "" && fl.ConfigDir == "" {
		return cfg, fl, nil, nil
	}
	fileCfg, warnings, err := LoadFiles(fl.ConfigFile, fl.ConfigDir)
	if err != nil {
		return nil, nil, nil, err
	}
	if err := ApplyFlags(fs, fileCfg); err != nil {
		return nil, nil, nil, err
	}
	return fileCfg, fl, warnings, nil
}

// ApplyFlags copies onto cfg the values of the Config flags that were set
// explicitly in the parsed fs (fs.Visit); other flags are ignored.
func ApplyFlags(fs *pflag.FlagSet, cfg *Config) error {
	dst := pflag.NewFlagSet("config", pflag.ContinueOnError)
	cfg.AddFlags(dst)
	var errs []error
	fs.Visit(func(f *pflag.Flag) {
		d := dst.Lookup(f.Name)
		if d == nil {
			return
		}
		var err error
		if sv, ok := f.Value.(pflag.SliceValue); ok {
			err = d.Value.(pflag.SliceValue).Replace(sv.GetSlice())
		} else {
			err = d.Value.Set(f.Value.String())
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("--%s: %w", f.Name, err))
		}
	})
	return errors.Join(errs...)
}
