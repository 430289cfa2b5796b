// Package network runs several nodes on one host, each an agent with its
// own containerd in its own network namespace (hack/containerd.sh's node
// instances, 10.123.0.1N on the bridge natestbr), joined to an in-process
// control plane that listens on the node network's gateway 10.123.0.1. The
// agents own the pod network (--network-plugin=kubenet): CNI
// configuration from their Node's pod CIDR and routes between nodes.
package network

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nodeagent/nodeagent/pkg/controlplane/server"
	nart "github.com/nodeagent/nodeagent/pkg/runtime"
	"github.com/nodeagent/nodeagent/test/framework"
)

const apiTimeout = 90 * time.Second

var (
	agentBin, kubectlBin, work string
	cp                         *framework.ControlPlane
	nodes                      []*node
)

// node is one node instance with its agent.
type node struct {
	name  string
	inst  framework.Instance
	cri   *nart.Client
	agent *framework.Agent
}

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	if os.Geteuid() != 0 {
		fmt.Println("network: skipped, needs root (containerd, runc, CNI, network namespaces)")
		return 0
	}
	var err error
	if work, err = os.MkdirTemp("", "nodeagent-network"); err != nil {
		fmt.Println(err)
		return 1
	}
	defer os.RemoveAll(work)
	if agentBin, err = framework.BuildAgent(work); err != nil {
		fmt.Println(err)
		return 1
	}
	if kubectlBin, err = framework.BuildKubectl(work); err != nil {
		fmt.Println(err)
		return 1
	}
	for i := 1; i <= 2; i++ {
		n := &node{name: fmt.Sprintf("net-node%d", i), inst: framework.NodeInstance(i)}
		stop, err := n.inst.Start()
		if err != nil {
			fmt.Println(err)
			return 1
		}
		defer func() {
			if err := stop(); err != nil {
				fmt.Println(err)
			}
		}()
		if n.cri, err = n.inst.Dial(); err != nil {
			fmt.Println(err)
			return 1
		}
		defer n.cri.Close()
		if err := n.inst.Sweep(n.cri); err != nil {
			fmt.Println(err)
			return 1
		}
		nodes = append(nodes, n)
	}
	cp, err = framework.StartControlPlane(filepath.Join(work, "server"), framework.NodeGatewayIP, func(c *server.Config) {
		c.BindAddress = "0.0.0.0"
		c.ExtraSANs = []string{framework.NodeGatewayIP}
		// Cluster DNS on the node network's gateway; pods reach it at the
		// kube-dns service IP through the agents' service proxy.
		c.DNSAddress = framework.NodeGatewayIP + ":53"
	})
	if err != nil {
		fmt.Println(err)
		return 1
	}
	defer func() {
		if err := cp.Stop(); err != nil {
			fmt.Println(err)
		}
	}()
	return m.Run()
}

// startAgent starts n's agent joined to the control plane, owning the pod
// network. Cleanup deletes the test's pods first (the caller's
// deleteOnCleanup runs before), waits for the runtime to hold no sandbox,
// stops the agent and sweeps the instance.
func startAgent(t *testing.T, n *node) {
	t.Helper()
	startAgentOn(t, n, cp, nil, "--service-proxy", "--cluster-cidr", "10.244.0.0/16",
		"--cluster-dns", server.KubeDNSServiceIP, "--cluster-domain", "cluster.local")
}

// startAgentOn is startAgent joined to the given control plane, with the
// given flags beyond kubenet's; before, if set, runs before the agent
// starts (to write static pod manifests).
func startAgentOn(t *testing.T, n *node, cp *framework.ControlPlane, before func(*framework.Agent), flags ...string) {
	t.Helper()
	dir := t.TempDir()
	kubeconfig, err := cp.NodeKubeconfig(dir, n.name)
	if err != nil {
		t.Fatal(err)
	}
	a, err := framework.NewAgentOn(agentBin, dir, n.inst)
	if err != nil {
		t.Fatal(err)
	}
	a.NodeName = n.name
	a.ExtraArgs = append([]string{"--kubeconfig", kubeconfig, "--network-plugin=kubenet",
		"--cni-conf-dir", n.inst.CNIConfDir(), "--cni-bin-dir", "/usr/lib/cni"}, flags...)
	if before != nil {
		before(a)
	}
	if err := a.Start(); err != nil {
		t.Fatal(err)
	}
	n.agent = a
	t.Cleanup(func() { stopAgent(t, n) })
}

// stopAgent waits for the node's sandboxes to go, then stops its agent.
func stopAgent(t *testing.T, n *node) {
	t.Helper()
	if n.agent == nil {
		return
	}
	waitFor(t, apiTimeout, n.name+"'s runtime to hold no sandbox", func() (bool, error) {
		sbs, err := n.cri.ListPodSandbox(context.Background(), nil)
		return err == nil && len(sbs) == 0, err
	})
	if err := n.agent.Stop(); err != nil {
		t.Errorf("stop agent %s: %v", n.name, err)
	}
	if err := n.inst.Sweep(n.cri); err != nil {
		t.Error(err)
	}
	if err := framework.UnmountUnder(n.agent.Dir); err != nil {
		t.Error(err)
	}
	if t.Failed() || os.Getenv("NETWORK_AGENT_LOG") != "" {
		t.Logf("agent %s log:\n%s", n.name, n.agent.Logs())
	}
	n.agent = nil
}

// kubectl runs kubectl as the admin.
func kubectl(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	return framework.Kubectl{Bin: kubectlBin, Kubeconfig: cp.Kubeconfig(), Home: work}.Run(t, args...)
}

func mustKubectl(t *testing.T, args ...string) string {
	t.Helper()
	return framework.Kubectl{Bin: kubectlBin, Kubeconfig: cp.Kubeconfig(), Home: work}.Must(t, args...)
}

// apply applies a manifest and deletes what it made on cleanup.
func apply(t *testing.T, manifest string) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "m.yaml")
	if err := os.WriteFile(p, []byte(manifest), 0o600); err != nil {
		t.Fatal(err)
	}
	mustKubectl(t, "apply", "-f", p)
	t.Cleanup(func() { _, _, _ = kubectl(t, "delete", "-f", p, "--ignore-not-found", "--wait=true", "--timeout=90s") })
}

// waitFor is framework.WaitFor.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() (bool, error)) {
	t.Helper()
	framework.WaitFor(t, timeout, what, cond)
}
