package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/spf13/cobra"
	"golang.org/x/sync/errgroup"

	"github.com/nodeagent/nodeagent/pkg/agent"
	"github.com/nodeagent/nodeagent/pkg/agentconfig"
	"github.com/nodeagent/nodeagent/pkg/controlplane/controller/nodeipam"
	"github.com/nodeagent/nodeagent/pkg/controlplane/pki"
	"github.com/nodeagent/nodeagent/pkg/controlplane/server"
	"github.com/nodeagent/nodeagent/pkg/nodeapi"
)

func serverCmd() *cobra.Command {
	var (
		cfg         server.Config
		verbosity   int
		agentConfig string
		agentNet    = localAgentNetwork{CNIConfDir: agentconfig.DefaultCNIConfDir, CNIBinDirs: agentconfig.DefaultCNIBinDirs}
	)
	cmd := &cobra.Command{
		Use:   "server",
		Short: "Run the bundled control plane: etcd (embedded or external) and the API server",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg.Logger = newLogger(verbosity)
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
			defer stop()
			ready := make(chan struct{})
			cfg.Ready = ready
			g, gctx := errgroup.WithContext(ctx)
			g.Go(func() error { return server.Run(gctx, cfg) })
			if !cfg.DisableAgent {
				g.Go(func() error {
					select {
					case <-ready:
					case <-gctx.Done():
						return nil
					}
					return runLocalAgent(gctx, &cfg, agentConfig, agentNet)
				})
			}
			return g.Wait()
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&cfg.DataDir, "data-dir", server.DefaultDataDir, "Directory for the PKI, the embedded etcd, admin.kubeconfig and tokens.csv.")
	fs.IntVar(&cfg.SecurePort, "secure-port", server.DefaultSecurePort, "The port on which to serve HTTPS with authentication.")
	fs.StringVar(&cfg.BindAddress, "bind-address", server.DefaultBindAddress, "The IP address on which to listen for the --secure-port port.")
	fs.StringSliceVar(&cfg.EtcdServers, "etcd-servers", nil, "List of etcd servers to connect with (scheme://ip:port), comma separated. Empty runs an embedded etcd.")
	fs.StringVar(&cfg.EtcdCAFile, "etcd-cafile", "", "SSL Certificate Authority file used to secure etcd communication.")
	fs.StringVar(&cfg.EtcdCertFile, "etcd-certfile", "", "SSL certification file used to secure etcd communication.")
	fs.StringVar(&cfg.EtcdKeyFile, "etcd-keyfile", "", "SSL key file used to secure etcd communication.")
	fs.IntVar(&cfg.EtcdClientPort, "etcd-client-port", 0, "Loopback client port of the embedded etcd (default 2379).")
	fs.IntVar(&cfg.EtcdPeerPort, "etcd-peer-port", 0, "Loopback peer port of the embedded etcd (default 2380).")
	fs.StringSliceVar(&cfg.ExtraSANs, "tls-san", nil, "Additional host names or IPs for the serving certificate.")
	fs.BoolVar(&cfg.DisableAgent, "disable-agent", false, "Do not run a node agent for this host.")
	fs.StringVar(&cfg.ClusterCIDR, "cluster-cidr", nodeipam.DefaultClusterCIDR, "CIDR range (IPv4) of the pods; each node gets a block of it as its spec.podCIDR.")
	fs.IntVar(&cfg.NodeCIDRMaskSize, "node-cidr-mask-size", nodeipam.DefaultNodeCIDRMaskSize, "Mask size of the pod CIDR each node gets out of --cluster-cidr.")
	fs.StringVar(&cfg.DNSAddress, "dns-address", server.DefaultDNSAddress, "UDP and TCP address of the cluster DNS server; empty disables it. When the default is in use, this host's IP on port 53 is tried; pods reach either at the host's IP.")
	fs.StringVar(&cfg.ClusterDomain, "cluster-domain", server.DefaultClusterDomain, "DNS domain of the cluster: services are <svc>.<ns>.svc.<domain>.")
	fs.StringSliceVar(&cfg.DNSUpstreams, "dns-upstream", nil, "Resolvers (IP or IP:port) for names outside the cluster domain, comma separated (default: the nameservers of /etc/resolv.conf).")
	fs.StringVar(&cfg.KubeletCertificateAuthority, "kubelet-certificate-authority", "", "Path to a cert file for the certificate authority that verifies kubelets' serving certificates (default: the kubelet-serving CA, <data-dir>/pki/kubelet-serving-ca.crt, which signs the serving certificates agents request and nothing else).")
	fs.BoolVar(&cfg.KubeletInsecureTLS, "kubelet-insecure-tls", false, "Do not verify kubelets' serving certificates (for kubelets that serve self-signed ones).")
	fs.StringVar(&agentNet.Plugin, "network-plugin", agentNet.Plugin, "This host's agent: \"kubenet\" writes the CNI configuration for its node's pod CIDR (out of --cluster-cidr) and routes to other nodes; empty leaves the runtime's CNI configuration alone.")
	fs.StringVar(&agentNet.CNIConfDir, "cni-conf-dir", agentNet.CNIConfDir, "This host's agent: the runtime's CNI configuration directory (with --network-plugin=kubenet).")
	fs.StringSliceVar(&agentNet.CNIBinDirs, "cni-bin-dir", agentNet.CNIBinDirs, "This host's agent: CNI plugin directories (with --network-plugin=kubenet).")
	fs.BoolVar(&agentNet.ServiceProxy, "service-proxy", agentNet.ServiceProxy, "This host's agent runs the service proxy (nftables): Service ClusterIPs and NodePorts work on this host, and pods use the cluster DNS at its service IP.")
	fs.StringVar(&agentConfig, "agent-config", "", "KubeletConfiguration file of this host's node agent (default: the agent's defaults).")
	fs.IntVarP(&verbosity, "v", "v", 0, "Log verbosity (klog-style: 4 and above logs debug messages).")
	cmd.AddCommand(nodeKubeconfigCmd())
	return cmd
}

func nodeKubeconfigCmd() *cobra.Command {
	var dataDir, node, serverURL, out string
	cmd := &cobra.Command{
		Use:   "node-kubeconfig",
		Short: "Mint a node credential and write a kubeconfig for an agent joining this control plane",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			if err := server.WriteNodeKubeconfig(dataDir, node, serverURL, out); err != nil {
				return err
			}
			fmt.Printf("wrote %s for node %s\n", out, node)
			return nil
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&dataDir, "data-dir", server.DefaultDataDir, "The control plane's data directory (its CA signs the credential).")
	fs.StringVar(&node, "node", "", "The node's name (its agent's --hostname-override).")
	fs.StringVar(&serverURL, "server", "https://127.0.0.1:6443", "The API server URL the agent connects to.")
	fs.StringVar(&out, "out", "node.kubeconfig", "Where to write the kubeconfig.")
	_ = cmd.MarkFlagRequired("node")
	return cmd
}

// localAgentNetwork is how this host's agent does networking.
type localAgentNetwork struct {
	Plugin       string
	CNIConfDir   string
	CNIBinDirs   []string
	ServiceProxy bool
}

// runLocalAgent runs this host's node agent joined to the control plane
// with a node credential minted for it, once the API server is ready.
func runLocalAgent(ctx context.Context, cfg *server.Config, configFile string, netCfg localAgentNetwork) error {
	agentCfg := agentconfig.Default()
	if configFile != "" {
		var err error
		if agentCfg, err = agentconfig.Load(configFile); err != nil {
			return err
		}
	}
	// Pods of this host resolve cluster names through the server's DNS,
	// at the kube-dns service IP when the agent proxies services,
	// unless the agent's config names its own.
	if ip := cfg.ClusterDNSIP(); ip != "" && len(agentCfg.ClusterDNS) == 0 {
		if netCfg.ServiceProxy {
			ip = server.KubeDNSServiceIP
		}
		agentCfg.ClusterDNS, agentCfg.ClusterDomain = []string{ip}, cfg.ClusterDomain
	}
	if _, err := agentCfg.Validate(); err != nil {
		return fmt.Errorf("agent configuration: %w", err)
	}
	node, err := agent.NodeName("")
	if err != nil {
		return err
	}
	kubeconfig := filepath.Join(cfg.DataDir, "node.kubeconfig")
	if err := server.WriteNodeKubeconfig(cfg.DataDir, node, cfg.LocalURL(), kubeconfig); err != nil {
		return fmt.Errorf("node credential: %w", err)
	}
	flags := agentconfig.DefaultFlags()
	flags.Kubeconfig = kubeconfig
	dropUntrustedServingCert(cfg.DataDir, flags.RootDir, cfg.Logger)
	flags.NetworkPlugin, flags.CNIConfDir, flags.CNIBinDirs = netCfg.Plugin, netCfg.CNIConfDir, netCfg.CNIBinDirs
	flags.ServiceProxy, flags.ClusterCIDR = netCfg.ServiceProxy, cfg.ClusterCIDR
	if err := flags.Validate(); err != nil {
		return fmt.Errorf("agent: %w", err)
	}
	return agent.Run(ctx, agent.Options{Config: agentCfg, Flags: flags, Logger: cfg.Logger.With("component", "agent")})
}

// dropUntrustedServingCert removes the local agent's requested serving
// certificate when the kubelet-serving CA did not sign it (one issued by
// an older version, from the cluster CA, which the API server no longer
// accepts from kubelets): the agent then requests a new one.
func dropUntrustedServingCert(dataDir, rootDir string, log *slog.Logger) {
	caPEM, err := os.ReadFile(filepath.Join(dataDir, "pki", pki.KubeletServingCACertFile))
	if err != nil {
		return
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	path := filepath.Join(rootDir, "pki", nodeapi.ServerCertPairName+"-current.pem")
	pair, err := tls.LoadX509KeyPair(path, path)
	if err != nil || pair.Leaf == nil {
		return
	}
	if _, err := pair.Leaf.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err == nil {
		return
	}
	if err := os.Remove(path); err == nil {
		log.Info("removed a serving certificate the kubelet-serving CA did not sign; a new one will be requested", "path", path)
	}
}
