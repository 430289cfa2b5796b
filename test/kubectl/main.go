// Command kubectl is upstream's kubectl (same main as k8s.io/kubernetes'
// cmd/kubectl), built from the module graph so the control-plane
// end-to-end tests drive the server the way users do.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubectl/pkg/cmd"
	"k8s.io/kubectl/pkg/cmd/util"
)

func main() {
	command := cmd.NewDefaultKubectlCommand()
	if err := cli.RunNoErrOutput(command); err != nil {
		util.CheckErr(err)
	}
	os.Exit(0)
}
