// Package flow runs the whole pod flow on one host: the control plane
// in-process (embedded etcd, real HTTPS API server), the real agent binary
// joined to it with a node credential, and the "test" containerd instance.
// Clients talk to the API with client-go as the admin, as users do.
package flow

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/nodeagent/nodeagent/pkg/controlplane/server"
	nart "github.com/nodeagent/nodeagent/pkg/runtime"
	"github.com/nodeagent/nodeagent/test/framework"
)

const nodeName = "flow-node"

var (
	agentBin  string
	cri       *nart.Client
	admin     kubernetes.Interface
	dataDir   string
	serverURL string
)

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	if os.Geteuid() != 0 {
		fmt.Println("flow: skipped, needs root (containerd, runc, CNI)")
		return 0
	}
	work, err := os.MkdirTemp("", "nodeagent-flow")
	if err != nil {
		fmt.Println(err)
		return 1
	}
	defer os.RemoveAll(work)
	stopCtrd, err := framework.StartContainerd()
	if err != nil {
		fmt.Println(err)
		return 1
	}
	defer func() {
		if err := stopCtrd(); err != nil {
			fmt.Println(err)
		}
	}()
	if agentBin, err = framework.BuildAgent(work); err != nil {
		fmt.Println(err)
		return 1
	}
	if kubectlBin, err = framework.BuildKubectl(work); err != nil {
		fmt.Println(err)
		return 1
	}
	kubectlHome = work
	if cri, err = framework.DialCRI(); err != nil {
		fmt.Println(err)
		return 1
	}
	defer cri.Close()
	if err := framework.SweepSandboxes(cri); err != nil {
		fmt.Println(err)
		return 1
	}
	stopCP, err := startControlPlane(filepath.Join(work, "server"))
	if err != nil {
		fmt.Println(err)
		return 1
	}
	defer func() {
		if err := stopCP(); err != nil {
			fmt.Println(err)
		}
	}()
	return m.Run()
}

// startControlPlane runs the control plane on free loopback ports until
// stop.
func startControlPlane(dir string) (stop func() error, err error) {
	cp, err := framework.StartControlPlane(dir, "", nil)
	if err != nil {
		return nil, err
	}
	dataDir, serverURL, admin = cp.DataDir, cp.URL, cp.Admin
	return cp.Stop, nil
}

// newAgent starts the agent joined to the API with a node credential.
// Cleanup removes the manifests, waits for the agent to remove its pods,
// stops it and sweeps the runtime.
func newAgent(t *testing.T) *framework.Agent {
	return newAgentOn(t, framework.TestInstance, nodeName, cri)
}

// newAgentOn is newAgent for another node on another containerd instance
// (cri is connected to it).
func newAgentOn(t *testing.T, inst framework.Instance, node string, cri *nart.Client) *framework.Agent {
	t.Helper()
	return newAgentConfigured(t, inst, node, cri, "")
}

// newAgentConfigured is newAgentOn with KubeletConfiguration lines added
// to the agent's config.
func newAgentConfigured(t *testing.T, inst framework.Instance, node string, cri *nart.Client, config string, prepare ...func(*framework.Agent) error) *framework.Agent {
	t.Helper()
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "node.kubeconfig")
	if err := server.WriteNodeKubeconfig(dataDir, node, serverURL, kubeconfig); err != nil {
		t.Fatal(err)
	}
	a, err := framework.NewAgentOn(agentBin, dir, inst)
	if err != nil {
		t.Fatal(err)
	}
	a.NodeName = node
	a.ExtraArgs = []string{"--kubeconfig", kubeconfig}
	if err := a.AppendConfig(config); err != nil {
		t.Fatal(err)
	}
	for _, fn := range prepare {
		if err := fn(a); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		entries, _ := os.ReadDir(a.ManifestDir)
		for _, e := range entries {
			os.Remove(filepath.Join(a.ManifestDir, e.Name()))
		}
		waitFor(t, 90*time.Second, "the runtime to hold no sandbox", func() (bool, error) {
			sbs, err := cri.ListPodSandbox(context.Background(), nil)
			return err == nil && len(sbs) == 0, err
		})
		if err := a.Stop(); err != nil {
			t.Errorf("stop agent: %v", err)
		}
		if err := inst.Sweep(cri); err != nil {
			t.Error(err)
		}
		if err := framework.UnmountUnder(a.Dir); err != nil {
			t.Error(err)
		}
		if t.Failed() || os.Getenv("FLOW_AGENT_LOG") != "" {
			t.Logf("agent %s log:\n%s", node, a.Logs())
		}
	})
	// The API server verifies kubelets: streams work once the requested
	// certificate replaced the self-signed one.
	waitServingCertIssued(t, a, node)
	return a
}

// waitFor is framework.WaitFor.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() (bool, error)) {
	t.Helper()
	framework.WaitFor(t, timeout, what, cond)
}
