package allinone

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/nodeagent/nodeagent/pkg/agent"
	"github.com/nodeagent/nodeagent/pkg/agentconfig"
	"github.com/nodeagent/nodeagent/pkg/controlplane/pki"
	"github.com/nodeagent/nodeagent/pkg/controlplane/server"
	"github.com/nodeagent/nodeagent/pkg/nodeapi"
)

// nodeKubeconfigFile, in the server's data directory, is the local
// agent's kubeconfig.
const nodeKubeconfigFile = "node.kubeconfig"

// runLocalAgent runs this host's node agent, joined to the control plane
// with a node credential minted for it (the API server is ready), as a
// child process: `nodeagent agent` lowers its own oom_score_adj to the
// kubelet's -999, which in this process would shield the whole control
// plane and make the kernel kill the pods first when it grows.
func runLocalAgent(ctx context.Context, c *Config) error {
	agentCfg, err := c.agentConfig()
	if err != nil {
		return err
	}
	node, err := agent.NodeName("")
	if err != nil {
		return err
	}
	srv := &c.Server
	kubeconfig := filepath.Join(srv.DataDir, nodeKubeconfigFile)
	if err := server.WriteNodeKubeconfig(srv.DataDir, node, srv.LocalURL(), kubeconfig); err != nil {
		return fmt.Errorf("node credential: %w", err)
	}
	flags := c.agentFlags(kubeconfig)
	flags.HostnameOverride = node
	dropUntrustedServingCert(srv.DataDir, flags.RootDir, srv.Logger)
	if err := flags.Validate(); err != nil {
		return fmt.Errorf("agent: %w", err)
	}
	bin := c.AgentBinary
	if bin == "" {
		if bin, err = os.Executable(); err != nil {
			return fmt.Errorf("agent binary: %w", err)
		}
	}
	out := c.AgentOutput
	if out == nil {
		out = os.Stderr
	}
	ch := &child{Path: bin, Args: agentArgs(flags, agentCfg, c.AgentConfigFile, c.AgentVerbosity), Output: out,
		Logger: srv.Logger.With("component", agentComponent), Backoff: time.Second, MaxBackoff: time.Minute,
		StopTimeout: agentStopTimeout}
	return ch.supervise(ctx)
}

const (
	// agentComponent is the component attribute of the agent's logs.
	agentComponent = "agent"
	// agentStopTimeout bounds the agent's graceful stop (its components
	// stop in reverse order; pods keep running).
	agentStopTimeout = 30 * time.Second
)

// agentArgs are the arguments of `nodeagent agent` for the local agent:
// flags, the configuration file (cfgFile, "" for the defaults) and the
// cluster DNS the server chose for its pods (cfg's).
func agentArgs(flags *agentconfig.Flags, cfg *agentconfig.Config, cfgFile string, verbosity int) []string {
	args := []string{"agent", "--kubeconfig=" + flags.Kubeconfig, "--root-dir=" + flags.RootDir,
		"--hostname-override=" + flags.HostnameOverride, "--log-component=" + agentComponent}
	if cfgFile != "" {
		args = append(args, "--config="+cfgFile)
	}
	if len(cfg.ClusterDNS) != 0 {
		args = append(args, "--cluster-dns="+strings.Join(cfg.ClusterDNS, ","))
		if cfg.ClusterDomain != "" {
			args = append(args, "--cluster-domain="+cfg.ClusterDomain)
		}
	}
	if flags.NetworkPlugin != "" {
		args = append(args, "--network-plugin="+flags.NetworkPlugin, "--cni-conf-dir="+flags.CNIConfDir,
			"--cni-bin-dir="+strings.Join(flags.CNIBinDirs, ","))
	}
	if flags.ServiceProxy {
		args = append(args, "--service-proxy")
	}
	if cfg.ServerTLSBootstrap != nil && *cfg.ServerTLSBootstrap {
		args = append(args, "--rotate-server-certificates")
	}
	if flags.ClusterCIDR != "" {
		args = append(args, "--cluster-cidr="+flags.ClusterCIDR)
	}
	if verbosity != 0 {
		args = append(args, "-v="+strconv.Itoa(verbosity))
	}
	return args
}

// agentConfig is the local agent's KubeletConfiguration: the file's, or
// the defaults, pointed at the cluster DNS, with serverTLSBootstrap on
// unless the file sets it (upstream's default is off; this server's
// controllers approve and sign its nodes' serving certificates and its API
// server verifies kubelets with them).
func (c *Config) agentConfig() (*agentconfig.Config, error) {
	agentCfg := agentconfig.Default()
	if c.AgentConfigFile != "" {
		var err error
		// The agent process, started with this file as its --config,
		// logs the file's warnings.
		if agentCfg, _, err = agentconfig.Load(c.AgentConfigFile); err != nil {
			return nil, err
		}
	}
	useClusterDNS(agentCfg, &c.Server, c.Network.ServiceProxy)
	if agentCfg.ServerTLSBootstrap == nil {
		on := true
		agentCfg.ServerTLSBootstrap = &on
	}
	if _, err := agentCfg.Validate(); err != nil {
		return nil, fmt.Errorf("agent configuration: %w", err)
	}
	return agentCfg, nil
}

// useClusterDNS makes the pods of this host resolve cluster names through
// the server's DNS, at the kube-dns service IP when the agent proxies
// services (at the host's IP otherwise), unless the server runs no DNS or
// the agent's configuration names its own.
func useClusterDNS(agentCfg *agentconfig.Config, srv *server.Config, serviceProxy bool) {
	ip := srv.ClusterDNSIP()
	if ip == "" || len(agentCfg.ClusterDNS) != 0 {
		return
	}
	if serviceProxy {
		ip = server.KubeDNSServiceIP
	}
	agentCfg.ClusterDNS, agentCfg.ClusterDomain = []string{ip}, srv.ClusterDomain
}

// agentFlags are the local agent's flags: joined with kubeconfig, with
// c's networking and the server's cluster CIDR.
func (c *Config) agentFlags(kubeconfig string) *agentconfig.Flags {
	flags := agentconfig.DefaultFlags()
	flags.Kubeconfig = kubeconfig
	flags.NetworkPlugin, flags.CNIConfDir, flags.CNIBinDirs = c.Network.Plugin, c.Network.CNIConfDir, c.Network.CNIBinDirs
	flags.ServiceProxy, flags.ClusterCIDR = c.Network.ServiceProxy, c.Server.ClusterCIDR
	if c.AgentRootDir != "" {
		flags.RootDir = c.AgentRootDir
	}
	return flags
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
