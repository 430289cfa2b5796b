// Package e2e runs the agent on the real containerd, runc and CNI plugins
// (the dedicated "test" containerd instance, or the one NODEAGENT_E2E_RUNTIME
// names: framework.InstanceFromEnv) and checks what a user sees: pod status
// through the read-only API, containers through the CRI, logs on disk.
package e2e

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	criv1 "k8s.io/cri-api/pkg/apis/runtime/v1"

	nart "github.com/nodeagent/nodeagent/pkg/runtime"
	"github.com/nodeagent/nodeagent/test/framework"
)

var (
	agentBin string
	// ctrd is the containerd instance the tests run on.
	ctrd framework.Instance
	cri  *nart.Client
	reg  *framework.Registry
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	if os.Geteuid() != 0 {
		fmt.Println("e2e: skipped, needs root (containerd, runc, CNI)")
		return 0
	}
	var err error
	if ctrd, err = framework.InstanceFromEnv(); err != nil {
		fmt.Println(err)
		return 1
	}
	stop, err := ctrd.Start()
	if err != nil {
		fmt.Println(err)
		return 1
	}
	defer func() {
		if err := stop(); err != nil {
			fmt.Println(err)
		}
	}()
	dir, err := os.MkdirTemp("", "nodeagent-e2e-bin")
	if err != nil {
		fmt.Println(err)
		return 1
	}
	defer os.RemoveAll(dir)
	if agentBin, err = framework.BuildAgent(dir); err != nil {
		fmt.Println(err)
		return 1
	}
	if cri, err = ctrd.Dial(); err != nil {
		fmt.Println(err)
		return 1
	}
	defer cri.Close()
	// A run that was killed may have left pods on the instance.
	if err := ctrd.Sweep(cri); err != nil {
		fmt.Println(err)
		return 1
	}
	if reg, err = framework.StartRegistry(); err != nil {
		fmt.Println(err)
		return 1
	}
	defer reg.Close()
	return m.Run()
}

// newAgent starts an agent for one test. Cleanup removes every manifest,
// waits for the agent to stop and remove the pods, stops the agent and
// removes whatever pod the test left in the runtime.
func newAgent(t *testing.T) *framework.Agent { return newAgentWith(t, "") }

// newAgentWith is newAgent with extra KubeletConfiguration lines.
func newAgentWith(t *testing.T, extraConfig string) *framework.Agent {
	t.Helper()
	return newAgentArgs(t, extraConfig)
}

// newAgentArgs is newAgentWith with extra agent flags.
func newAgentArgs(t *testing.T, extraConfig string, args ...string) *framework.Agent {
	t.Helper()
	a, err := framework.NewAgentOn(agentBin, t.TempDir(), ctrd)
	if err != nil {
		t.Fatal(err)
	}
	a.ExtraArgs = append(a.ExtraArgs, args...)
	if err := a.AppendConfig(extraConfig); err != nil {
		t.Fatal(err)
	}
	// Registered before Start, so that an agent that starts but never
	// answers is stopped too.
	t.Cleanup(func() {
		entries, _ := os.ReadDir(a.ManifestDir)
		for _, e := range entries {
			os.Remove(a.ManifestDir + "/" + e.Name())
		}
		deadline := time.Now().Add(90 * time.Second)
		for time.Now().Before(deadline) {
			pods, err := a.Pods()
			if err != nil || len(pods) == 0 {
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
		waitRuntimeEmpty(t, 90*time.Second)
		if err := a.Stop(); err != nil {
			t.Errorf("stop agent: %v", err)
		}
		sweepRuntime(t)
		if err := framework.UnmountUnder(a.Dir); err != nil {
			t.Error(err)
		}
		if t.Failed() {
			t.Logf("agent log:\n%s", a.Logs())
		}
	})
	if err := a.Start(); err != nil {
		t.Fatal(err)
	}
	return a
}

// waitRuntimeEmpty waits until the agent has removed every sandbox.
func waitRuntimeEmpty(t *testing.T, timeout time.Duration) {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		sbs, err := cri.ListPodSandbox(context.Background(), nil)
		if err == nil && len(sbs) == 0 {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Errorf("runtime still holds sandboxes %s after the pods were removed", timeout)
}

// sweepRuntime removes sandboxes left behind (the instance belongs to the
// tests alone), so a failed test does not disturb the next.
func sweepRuntime(t *testing.T) {
	if err := ctrd.Sweep(cri); err != nil {
		t.Error(err)
	}
}

// containersOf lists the runtime's containers of a pod.
func containersOf(t *testing.T, uid string) []*criv1.Container {
	t.Helper()
	cs, err := cri.ListContainers(context.Background(), &criv1.ContainerFilter{
		LabelSelector: map[string]string{nart.LabelPodUID: uid},
	})
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// gone reports whether path no longer exists.
func gone(path string) bool {
	_, err := os.Stat(path)
	return os.IsNotExist(err)
}
