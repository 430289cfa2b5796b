package main

import (
	"context"
	"fmt"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/nodeagent/nodeagent/pkg/allinone"
	"github.com/nodeagent/nodeagent/pkg/controlplane/server"
)

func serverCmd() *cobra.Command {
	var (
		cfg       allinone.Config
		verbosity int
	)
	cmd := &cobra.Command{
		Use:   "server",
		Short: "Run the bundled control plane: etcd (embedded or external) and the API server",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg.Server.Logger = newLogger(verbosity, "")
			cfg.AgentVerbosity = verbosity
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
			defer stop()
			return allinone.Run(ctx, cfg)
		},
	}
	cfg.AddFlags(cmd.Flags())
	cmd.Flags().IntVarP(&verbosity, "v", "v", 0, "Log verbosity (klog-style: 4 and above logs debug messages).")
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
