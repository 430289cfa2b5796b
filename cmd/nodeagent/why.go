package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/nodeagent/nodeagent/pkg/diagnose"
	"github.com/nodeagent/nodeagent/pkg/multicall"
)

const (
	// whyTimeout bounds all the API reads of one `why`.
	whyTimeout = 30 * time.Second
	// whyLogLines is how much of `logs --previous` the paragraph quotes.
	whyLogLines = int64(5)
)

func whyCmd() *cobra.Command {
	var namespace, kubeconfig string
	cmd := &cobra.Command{
		Use:   "why pod NAME",
		Short: "Say in one paragraph which component holds a pod that is not Running and Ready, and why",
		Long: "Reads the pod, its events, its node, its claims and its restarted containers' previous logs " +
			"from the API (with the kubeconfig `nodeagent kubectl` would use) and says what holds the pod, with the evidence.",
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			name, err := whyPodName(args)
			if err != nil {
				return err
			}
			cc := whyClientConfig(kubeconfig)
			if namespace == "" {
				if namespace, _, err = cc.Namespace(); err != nil {
					return err
				}
			}
			rc, err := cc.ClientConfig()
			if err != nil {
				return fmt.Errorf("kubeconfig: %w", err)
			}
			client, err := kubernetes.NewForConfig(rc)
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), whyTimeout)
			defer cancel()
			in, err := readWhyInput(ctx, client, namespace, name, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			_, err = fmt.Fprintln(cmd.OutOrStdout(), diagnose.Diagnose(in).Paragraph())
			return err
		},
	}
	cmd.Flags().StringVarP(&namespace, "namespace", "n", "", "The pod's namespace (default: the kubeconfig context's).")
	cmd.Flags().StringVar(&kubeconfig, "kubeconfig", "", "Path to the kubeconfig (default: as nodeagent kubectl chooses: $KUBECONFIG, else the server's admin kubeconfig when readable, else ~/.kube/config).")
	return cmd
}

// whyPodName takes "pod NAME" or "pod/NAME" (pods, po: kubectl's names).
func whyPodName(args []string) (string, error) {
	kind, name := args[0], ""
	if len(args) == 2 {
		name = args[1]
	} else {
		kind, name, _ = strings.Cut(args[0], "/")
	}
	switch kind {
	case "pod", "pods", "po":
	default:
		return "", fmt.Errorf("why explains pods: want `why pod NAME`, got %q", strings.Join(args, " "))
	}
	if name == "" {
		return "", errors.New("why pod: the pod's name is missing")
	}
	return name, nil
}

// whyClientConfig chooses the kubeconfig as `nodeagent kubectl` does
// (multicall.DefaultKubeconfig), then loads it as kubectl does.
func whyClientConfig(explicit string) clientcmd.ClientConfig {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = explicit
	if explicit == "" {
		rules.ExplicitPath = multicall.DefaultKubeconfig(nil, os.Getenv("KUBECONFIG"), multicall.AdminKubeconfig())
	}
	return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{})
}

// readWhyInput reads what diagnose needs. What only adds evidence (a
// previous log) is warned about on warn when it cannot be read.
func readWhyInput(ctx context.Context, client kubernetes.Interface, ns, name string, warn io.Writer) (diagnose.Input, error) {
	core := client.CoreV1()
	pod, err := core.Pods(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return diagnose.Input{}, fmt.Errorf("get pod %s/%s: %w", ns, name, err)
	}
	in := diagnose.Input{Pod: pod, Claims: map[string]*v1.PersistentVolumeClaim{}, PreviousLogs: map[string][]string{}}
	if in.Events, err = listEvents(ctx, client, ns, fields.Set{"involvedObject.kind": "Pod", "involvedObject.name": name, "involvedObject.uid": string(pod.UID)}); err != nil {
		return in, err
	}
	if node := pod.Spec.NodeName; node != "" {
		n, err := core.Nodes().Get(ctx, node, metav1.GetOptions{})
		switch {
		case err == nil:
			in.Node = n
		case !apierrors.IsNotFound(err):
			return in, fmt.Errorf("get node %s: %w", node, err)
		}
	}
	for _, claim := range diagnose.ClaimNames(pod) {
		pvc, err := core.PersistentVolumeClaims(ns).Get(ctx, claim, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			continue
		case err != nil:
			return in, fmt.Errorf("get persistentvolumeclaim %s/%s: %w", ns, claim, err)
		}
		in.Claims[claim] = pvc
		evs, err := listEvents(ctx, client, ns, fields.Set{"involvedObject.kind": "PersistentVolumeClaim", "involvedObject.name": claim})
		if err != nil {
			return in, err
		}
		in.Events = append(in.Events, evs...)
	}
	for _, c := range diagnose.RestartedContainers(pod) {
		lines, err := previousLog(ctx, client, pod, c)
		if err != nil {
			fmt.Fprintf(warn, "warning: logs --previous of container %s: %v\n", c, err)
			continue
		}
		in.PreviousLogs[c] = lines
	}
	return in, nil
}

func listEvents(ctx context.Context, client kubernetes.Interface, ns string, sel fields.Set) ([]v1.Event, error) {
	l, err := client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: sel.AsSelector().String()})
	if err != nil {
		return nil, fmt.Errorf("list events in %s (%s): %w", ns, sel.AsSelector(), err)
	}
	return l.Items, nil
}

// previousLog is the last lines of the container's previous instance.
func previousLog(ctx context.Context, client kubernetes.Interface, pod *v1.Pod, container string) ([]string, error) {
	tail := whyLogLines
	b, err := client.CoreV1().Pods(pod.Namespace).GetLogs(pod.Name, &v1.PodLogOptions{
		Container: container, Previous: true, TailLines: &tail,
	}).DoRaw(ctx)
	if err != nil {
		return nil, err
	}
	text := strings.TrimRight(string(b), "\n")
	if text == "" {
		return nil, nil
	}
	return strings.Split(text, "\n"), nil
}
