package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
	apimachineryversion "k8s.io/apimachinery/pkg/version"
	"k8s.io/component-base/metrics"

	"github.com/nodeagent/nodeagent/pkg/agent"
	"github.com/nodeagent/nodeagent/pkg/agentconfig"
	"github.com/nodeagent/nodeagent/pkg/multicall"
)

func main() {
	// Before cobra: kubectl parses its own flags.
	if args, ok := multicall.KubectlArgs(os.Args); ok {
		multicall.RunKubectl(args)
	}
	// The build stamps the bundled kubectl's version into
	// k8s.io/component-base/version. Its metrics registries would hide
	// the agent's and the server's metrics deprecated before that
	// version: they keep the unversioned build's view (nothing hidden).
	metrics.BuildVersion = func() apimachineryversion.Info { return apimachineryversion.Info{GitVersion: "v0.0.0"} }
	if err := rootCmd().Execute(); err != nil {
		os.Exit(1)
	}
}

func rootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:           "nodeagent",
		Short:         "A Kubernetes node agent (kubelet) for containerd and CRI-O",
		SilenceUsage:  true,
		SilenceErrors: false,
	}
	root.AddCommand(agentCmd(), serverCmd(), kubectlCmd(), versionCmd(), traceCmd(), whyCmd())
	return root
}

// kubectlCmd lists `nodeagent kubectl` in the help; main dispatches it
// before cobra parses anything.
func kubectlCmd() *cobra.Command {
	return &cobra.Command{
		Use:                "kubectl",
		Short:              "Run upstream kubectl (default kubeconfig: the server's admin.kubeconfig when readable)",
		DisableFlagParsing: true,
		Run:                func(_ *cobra.Command, args []string) { multicall.RunKubectl(args) },
	}
}

func versionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Run:   func(*cobra.Command, []string) { fmt.Println("nodeagent", agent.Version) },
	}
}

func agentCmd() *cobra.Command {
	cfg, fl := agentconfig.Default(), agentconfig.DefaultFlags()
	var (
		verbosity int
		component string
	)
	cmd := &cobra.Command{
		Use:   "agent",
		Short: "Run the node agent: static pods from --pod-manifest-path and, with --kubeconfig, the pods the API server binds to the node",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log := newLogger(verbosity, component)
			effective := cfg
			if fl.ConfigFile != "" || fl.ConfigDir != "" {
				fileCfg, warnings, err := agentconfig.LoadFiles(fl.ConfigFile, fl.ConfigDir)
				if err != nil {
					return err
				}
				// Logged before validation, so that a field ignored on
				// the way is in the log when validation refuses the rest.
				for _, w := range warnings {
					log.Warn("configuration", "warning", w)
				}
				if err := agentconfig.ApplyFlags(cmd.Flags(), fileCfg); err != nil {
					return err
				}
				effective = fileCfg
			}
			warnings, err := effective.Validate()
			if err != nil {
				return fmt.Errorf("invalid configuration: %w", err)
			}
			if err := fl.Validate(); err != nil {
				return err
			}
			for _, w := range warnings {
				log.Warn("configuration", "warning", w)
			}
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
			defer stop()
			return agent.Run(ctx, agent.Options{Config: effective, Flags: fl, Logger: log})
		},
	}
	cfg.AddFlags(cmd.Flags())
	fl.AddFlags(cmd.Flags())
	cmd.Flags().IntVarP(&verbosity, "v", "v", 0, "Log verbosity (klog-style: 4 and above logs debug messages).")
	// `nodeagent server` runs its agent with --log-component=agent: the
	// agent's lines on the server's stderr say whose they are.
	cmd.Flags().StringVar(&component, "log-component", "", "The component attribute of every log line.")
	_ = cmd.Flags().MarkHidden("log-component")
	return cmd
}

// newLogger logs to stderr at verbosity v, with component (when not
// empty) on every line.
func newLogger(v int, component string) *slog.Logger {
	level := slog.LevelInfo
	if v >= 4 {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	if component != "" {
		log = log.With("component", component)
	}
	return log
}
