package allinone

import (
	"context"
	"io"
	"log/slog"

	"github.com/spf13/pflag"
	"golang.org/x/sync/errgroup"

	"github.com/nodeagent/nodeagent/pkg/agentconfig"
	"github.com/nodeagent/nodeagent/pkg/controlplane/server"
)

// Config configures Run.
type Config struct {
	// Server is the control plane's configuration. Run sets its Ready
	// channel, and its Logger when nil.
	Server server.Config
	// AgentConfigFile is the KubeletConfiguration of this host's agent;
	// empty: the agent's defaults.
	AgentConfigFile string
	// Network is how this host's agent does networking.
	Network Network
	// AgentRootDir is the agent's --root-dir; empty: its default.
	AgentRootDir string
	// AgentBinary runs the agent (`AgentBinary agent ...`); empty: this
	// process's executable.
	AgentBinary string
	// AgentVerbosity is the agent's -v.
	AgentVerbosity int
	// AgentOutput receives the agent's logs; nil: os.Stderr.
	AgentOutput io.Writer
}

// Network is how this host's agent does networking (the agent's
// --network-plugin, --cni-conf-dir, --cni-bin-dir and --service-proxy).
type Network struct {
	// Plugin "kubenet" writes the CNI configuration for the node's pod
	// CIDR (out of Server.ClusterCIDR) and routes to the other nodes;
	// empty leaves the runtime's CNI configuration alone.
	Plugin     string
	CNIConfDir string
	CNIBinDirs []string
	// ServiceProxy runs the service proxy (nftables) on this host; its
	// pods then use the cluster DNS at its service IP.
	ServiceProxy bool
}

// AddFlags registers the `nodeagent server` flags: the control plane's
// (server.Config.AddFlags) and this host's agent's.
func (c *Config) AddFlags(fs *pflag.FlagSet) {
	c.Server.AddFlags(fs)
	fs.StringVar(&c.Network.Plugin, "network-plugin", "", "This host's agent: \"kubenet\" writes the CNI configuration for its node's pod CIDR (out of --cluster-cidr) and routes to other nodes; empty leaves the runtime's CNI configuration alone.")
	fs.StringVar(&c.Network.CNIConfDir, "cni-conf-dir", agentconfig.DefaultCNIConfDir, "This host's agent: the runtime's CNI configuration directory (with --network-plugin=kubenet).")
	fs.StringSliceVar(&c.Network.CNIBinDirs, "cni-bin-dir", agentconfig.DefaultCNIBinDirs, "This host's agent: CNI plugin directories (with --network-plugin=kubenet).")
	fs.BoolVar(&c.Network.ServiceProxy, "service-proxy", false, "This host's agent runs the service proxy (nftables): Service ClusterIPs and NodePorts work on this host, and pods use the cluster DNS at its service IP.")
	fs.StringVar(&c.AgentRootDir, "agent-root-dir", agentconfig.DefaultRootDir, "This host's agent: directory of its state (the agent's --root-dir).")
	fs.StringVar(&c.AgentConfigFile, "agent-config", "", "KubeletConfiguration file of this host's node agent (default: the agent's defaults).")
}

// Run runs the control plane and, unless c.Server.DisableAgent, this
// host's agent (a supervised child process) once the API server is
// ready, until ctx ends or the control plane fails, or the agent cannot
// be started. Pods keep running after it returns.
func Run(ctx context.Context, c Config) error {
	if c.Server.Logger == nil {
		c.Server.Logger = slog.Default()
	}
	ready := make(chan struct{})
	c.Server.Ready = ready
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return server.Run(gctx, c.Server) })
	if !c.Server.DisableAgent {
		g.Go(func() error {
			select {
			case <-ready:
			case <-gctx.Done():
				return nil
			}
			return runLocalAgent(gctx, &c)
		})
	}
	return g.Wait()
}
