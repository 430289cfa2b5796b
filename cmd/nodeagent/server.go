package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/nodeagent/nodeagent/pkg/agentconfig"

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
	cmd.AddCommand(nodeKubeconfigCmd(), tokenCmd())
	return cmd
}

func tokenCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "token", Short: "Manage bootstrap tokens for joining nodes (as kubeadm token)", Args: cobra.NoArgs}
	cmd.AddCommand(tokenCreateCmd())
	return cmd
}

func tokenCreateCmd() *cobra.Command {
	var (
		kubeconfig, serverURL, rootDir, description string
		ttl                                         time.Duration
		printJoin                                   bool
	)
	cmd := &cobra.Command{
		Use:   "create [TOKEN]",
		Short: "Create a bootstrap token a new node joins with (its agent's --bootstrap-kubeconfig) and print it",
		Long: "Create a bootstrap token secret (kube-system/bootstrap-token-<id>) through the API, as kubeadm token create.\n" +
			"The token authenticates as system:bootstrap:<id> in system:bootstrappers and " + server.NodeBootstrapGroup + ",\n" +
			"which may request a node client certificate that the control plane approves and signs.",
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
			if err != nil {
				return fmt.Errorf("kubeconfig %s: %w", kubeconfig, err)
			}
			client, err := kubernetes.NewForConfig(rc)
			if err != nil {
				return err
			}
			token := ""
			if len(args) == 1 {
				token = args[0]
			} else if token, err = server.GenerateBootstrapToken(); err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), 30*time.Second)
			defer cancel()
			if _, err := server.CreateJoinToken(ctx, client, server.JoinToken{Token: token, TTL: ttl, Description: description}, time.Now()); err != nil {
				return err
			}
			if !printJoin {
				fmt.Fprintln(cmd.OutOrStdout(), token)
				return nil
			}
			if serverURL == "" {
				serverURL = rc.Host
			}
			ca := rc.CAData
			if len(ca) == 0 && rc.CAFile != "" {
				if ca, err = os.ReadFile(rc.CAFile); err != nil {
					return fmt.Errorf("CA of %s: %w", kubeconfig, err)
				}
			}
			join, err := server.JoinCommand(serverURL, ca, token, rootDir)
			if err != nil {
				return err
			}
			fmt.Fprint(cmd.OutOrStdout(), join)
			return nil
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&kubeconfig, "kubeconfig", filepath.Join(server.DefaultDataDir, server.KubeconfigFile), "The admin kubeconfig the secret is created with.")
	fs.DurationVar(&ttl, "ttl", 24*time.Hour, "How long the token is valid (0: never expires), as kubeadm's --ttl.")
	fs.StringVar(&description, "description", "", "A human-friendly description of the token.")
	fs.BoolVar(&printJoin, "print-join-command", false, "Print the commands a new host runs to join instead of the token: writing its bootstrap kubeconfig (the CA embedded), then nodeagent agent.")
	fs.StringVar(&serverURL, "server", "", "With --print-join-command: the API server URL new nodes reach (default: the kubeconfig's).")
	fs.StringVar(&rootDir, "node-root-dir", agentconfig.DefaultRootDir, "With --print-join-command: the new node's --root-dir, where its kubeconfigs are written.")
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
