package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/nodeagent/nodeagent/pkg/controlplane/server"
	"github.com/nodeagent/nodeagent/pkg/multicall"
	"github.com/nodeagent/nodeagent/pkg/podtrace"
)

// traceCmd is `nodeagent trace pod NAME [-n NS]`: one pod's start as a
// timeline, from the API (the pod, its events) and its node's agent (the
// step log, through the API server's node proxy).
func traceCmd() *cobra.Command {
	var kubeconfig, namespace string
	cmd := &cobra.Command{
		Use:   "trace pod NAME",
		Short: "Print a pod's start as a timeline: API create, scheduling, and each step the node agent took",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if args[0] != "pod" && args[0] != "pods" && args[0] != "po" {
				return fmt.Errorf("trace: unknown resource %q (only pod)", args[0])
			}
			client, ns, err := traceClient(kubeconfig, namespace)
			if err != nil {
				return err
			}
			f, err := podtrace.Fetch(cmd.Context(), client, ns, args[1])
			if err != nil {
				return err
			}
			if f.TraceErr != nil {
				fmt.Fprintf(cmd.ErrOrStderr(), "warning: %v\n", f.TraceErr)
			}
			return podtrace.Format(cmd.OutOrStdout(), f.Pod, podtrace.Timeline(f.Pod, f.Events, f.Trace), f.Trace)
		},
	}
	cmd.Flags().StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig (default: as `nodeagent kubectl` picks it: $KUBECONFIG, else the server's admin.kubeconfig when readable, else ~/.kube/config)")
	cmd.Flags().StringVarP(&namespace, "namespace", "n", "", "the pod's namespace (default: the kubeconfig context's, else default)")
	return cmd
}

// traceClient loads the kubeconfig as `nodeagent kubectl` would pick it.
func traceClient(kubeconfig, namespace string) (kubernetes.Interface, string, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	if kubeconfig == "" {
		admin := filepath.Join(server.DefaultDataDir, server.KubeconfigFile)
		rules.ExplicitPath = multicall.DefaultKubeconfig(nil, os.Getenv("KUBECONFIG"), admin)
	}
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{})
	if namespace == "" {
		ns, _, err := cc.Namespace()
		if err != nil {
			return nil, "", err
		}
		namespace = ns
	}
	rc, err := cc.ClientConfig()
	if err != nil {
		return nil, "", err
	}
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, "", err
	}
	return client, namespace, nil
}
