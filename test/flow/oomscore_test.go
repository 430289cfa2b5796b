package flow

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/nodeagent/nodeagent/pkg/agent"
	"github.com/nodeagent/nodeagent/pkg/controlplane/server"
	"github.com/nodeagent/nodeagent/test/framework"
)

// TestServerOOMScore runs `nodeagent server` with its own agent (issue 16,
// finding 5): the agent, a child process, has its oomScoreAdj (the
// kubelet's -999 by default); the control plane keeps the score it was
// started with, so that the kernel does not kill the pods first when the
// control plane grows. SIGTERM stops both.
func TestServerOOMScore(t *testing.T) {
	dir := t.TempDir()
	// The agent's configuration as the other tests': the test instance,
	// free ports, its directories under dir.
	a, err := framework.NewAgentOn(agentBin, dir, framework.TestInstance)
	if err != nil {
		t.Fatal(err)
	}
	// Lowering a score needs CAP_SYS_RESOURCE; raising it does not: on a
	// host without it the agent asks for 500, which the server would
	// share as well if they were one process.
	wantAgent := -999
	if !hasCapSysResource(t) {
		wantAgent = 500
		if err := a.AppendConfig("oomScoreAdj: 500\n"); err != nil {
			t.Fatal(err)
		}
	}
	var ports [3]int
	for i := range ports {
		if ports[i], err = framework.NewFreePort(); err != nil {
			t.Fatal(err)
		}
	}
	dataDir := filepath.Join(dir, "server")
	cmd := exec.Command(agentBin, "server", "--data-dir", dataDir, "--bind-address", "127.0.0.1",
		"--secure-port", strconv.Itoa(ports[0]), "--etcd-client-port", strconv.Itoa(ports[1]),
		"--etcd-peer-port", strconv.Itoa(ports[2]), "--dns-address=",
		"--agent-config", filepath.Join(dir, "config.yaml"), "--agent-root-dir", a.RootDir)
	logs := &framework.SyncBuffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	stopped := false
	stop := func() error {
		if stopped {
			return nil
		}
		stopped = true
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-done:
			return err
		case <-time.After(90 * time.Second):
			_ = cmd.Process.Kill()
			<-done
			return fmt.Errorf("the server did not stop on SIGTERM")
		}
	}
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Error(err)
		}
		if err := framework.TestInstance.Sweep(cri); err != nil {
			t.Error(err)
		}
		if err := framework.UnmountUnder(dir); err != nil {
			t.Error(err)
		}
		if t.Failed() {
			t.Logf("server log:\n%s", logs.String())
		}
	})

	node, err := agent.NodeName("")
	if err != nil {
		t.Fatal(err)
	}
	var client kubernetes.Interface
	waitFor(t, 2*time.Minute, "the server's agent to register its node", func() (bool, error) {
		if client == nil {
			rc, err := clientcmd.BuildConfigFromFlags("", filepath.Join(dataDir, server.KubeconfigFile))
			if err != nil {
				return false, nil
			}
			if client, err = kubernetes.NewForConfig(rc); err != nil {
				return false, err
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, err := client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		return err == nil, nil
	})
	agentPID := childOf(t, cmd.Process.Pid)
	if !strings.Contains(logs.String(), "component=agent") {
		t.Error("the agent's log lines on the server's stderr have no component=agent")
	}

	own, serverScore, agentScore := oomScoreAdj(t, os.Getpid()), oomScoreAdj(t, cmd.Process.Pid), oomScoreAdj(t, agentPID)
	if serverScore == wantAgent || serverScore != own {
		t.Errorf("server (pid %d) oom_score_adj %d, want the %d it was started with (not the agent's -999)", cmd.Process.Pid, serverScore, own)
	}
	if agentScore != wantAgent {
		t.Errorf("agent (pid %d) oom_score_adj %d, want %d", agentPID, agentScore, wantAgent)
	}

	if err := stop(); err != nil {
		t.Fatalf("server stop: %v", err)
	}
	if _, err := os.Stat(fmt.Sprintf("/proc/%d", agentPID)); err == nil {
		t.Errorf("the agent (pid %d) still runs after the server stopped", agentPID)
	}
}

// childOf is the only child process of pid.
func childOf(t *testing.T, pid int) int {
	t.Helper()
	// Children of every thread: the one that forked the agent may be any.
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	var all []string
	for _, task := range tasks {
		b, _ := os.ReadFile(task)
		all = append(all, strings.Fields(string(b))...)
	}
	if len(all) != 1 {
		t.Fatalf("server (pid %d) children %v, want one (the agent)", pid, all)
	}
	child, err := strconv.Atoi(all[0])
	if err != nil {
		t.Fatal(err)
	}
	return child
}

func oomScoreAdj(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/oom_score_adj", pid))
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// hasCapSysResource says whether this process may lower oom_score_adj
// (CAP_SYS_RESOURCE, capability 24, in its effective set).
func hasCapSysResource(t *testing.T) bool {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if hex, ok := strings.CutPrefix(line, "CapEff:"); ok {
			caps, err := strconv.ParseUint(strings.TrimSpace(hex), 16, 64)
			if err != nil {
				t.Fatal(err)
			}
			return caps&(1<<24) != 0
		}
	}
	t.Fatal("no CapEff in /proc/self/status")
	return false
}
