package multicall

import (
	"os"
	"path/filepath"
	"strings"

	"k8s.io/component-base/cli"
	"k8s.io/kubectl/pkg/cmd"
	"k8s.io/kubectl/pkg/cmd/util"

	"github.com/nodeagent/nodeagent/pkg/controlplane/server"
)

// KubectlName is the bundled kubectl's name: the subcommand, and the
// program name that runs it.
const KubectlName = "kubectl"

// KubectlArgs reports whether the command line argv (os.Args) runs the
// bundled kubectl, and kubectl's arguments (after its name) if it does:
// argv[0] is named kubectl, or argv[1] is "kubectl".
func KubectlArgs(argv []string) ([]string, bool) {
	switch {
	case len(argv) == 0:
		return nil, false
	case filepath.Base(argv[0]) == KubectlName:
		return argv[1:], true
	case len(argv) > 1 && argv[1] == KubectlName:
		return argv[2:], true
	}
	return nil, false
}

// RunKubectl runs upstream kubectl with args and exits with its status,
// as its own main does. Without KUBECONFIG and --kubeconfig, it uses the
// server's admin kubeconfig (server.DefaultDataDir) when that is readable.
func RunKubectl(args []string) {
	if path := DefaultKubeconfig(args, os.Getenv("KUBECONFIG"), AdminKubeconfig()); path != "" {
		_ = os.Setenv("KUBECONFIG", path)
	}
	// kubectl reads os.Args itself (plugins, and cobra's arguments); its
	// user agent is named after os.Args[0].
	os.Args = append([]string{KubectlName}, args...)
	command := cmd.NewDefaultKubectlCommand()
	if err := cli.RunNoErrOutput(command); err != nil {
		util.CheckErr(err)
	}
	os.Exit(0)
}

// AdminKubeconfig is the admin kubeconfig of a server run with the
// default data directory: what kubectl uses when nothing else is named.
func AdminKubeconfig() string { return filepath.Join(server.DefaultDataDir, server.KubeconfigFile) }

// DefaultKubeconfig is the kubeconfig kubectl run with args gets as
// KUBECONFIG: admin if env (KUBECONFIG) is empty, args name no
// --kubeconfig and admin is readable; "" leaves kubectl's own default
// (~/.kube/config, in-cluster).
func DefaultKubeconfig(args []string, env, admin string) string {
	if env != "" || hasKubeconfigFlag(args) {
		return ""
	}
	f, err := os.Open(admin)
	if err != nil {
		return ""
	}
	_ = f.Close()
	return admin
}

// hasKubeconfigFlag reports whether args set --kubeconfig (before a "--",
// after which they are a command's, as in kubectl exec).
func hasKubeconfigFlag(args []string) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		if a == "--kubeconfig" || strings.HasPrefix(a, "--kubeconfig=") {
			return true
		}
	}
	return false
}
