package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/nodeagent/nodeagent/test/framework"
)

// cpuParts is the CPU time (utime+stime, with that of waited-for
// children) so far of the processes a pod start keeps busy, so that a
// burst's cost can be split: the runtime (containerd with the CNI plugins
// it runs, and the shims with their runc calls), this process (the
// control plane of the flow section, the clients and the CRI poller) and
// the agent. A shim's time is only counted while it lives: a burst is
// sampled with its pods still running, and no shim runs before it.
type cpuParts struct {
	containerd, shims, bench, agent time.Duration
}

// cpuSampling is where a runner leaves its sample.
type cpuSampling struct {
	agentPid int
	end      cpuParts
}

func (a cpuParts) sub(b cpuParts) cpuParts {
	return cpuParts{a.containerd - b.containerd, a.shims - b.shims, a.bench - b.bench, a.agent - b.agent}
}

func (a cpuParts) total() time.Duration { return a.containerd + a.shims + a.bench + a.agent }

// sampleCPU reads the parts; agentPid 0 has no agent.
func sampleCPU(agentPid int) (cpuParts, error) {
	var p cpuParts
	b, err := os.ReadFile("/run/nodeagent-test/containerd.pid")
	if err != nil {
		return p, fmt.Errorf("the test containerd's pid: %w", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return p, fmt.Errorf("the test containerd's pid: %w", err)
	}
	if p.containerd, err = cpuOf(pid); err != nil {
		return p, err
	}
	self, err := readStat(os.Getpid())
	if err != nil {
		return p, err
	}
	p.bench = self.self // its children are the go toolchain, not pod work
	if agentPid != 0 {
		if p.agent, err = cpuOf(agentPid); err != nil {
			return p, err
		}
	}
	for _, proc := range processes() {
		if filepath.Base(proc.args[0]) != "containerd-shim-runc-v2" || !hasArg(proc.args, "-address", framework.TestSocket) {
			continue
		}
		if d, err := cpuOf(proc.pid); err == nil { // a shim may exit between list and read
			p.shims += d
		}
	}
	return p, nil
}

func cpuOf(pid int) (time.Duration, error) {
	s, err := readStat(pid)
	return s.self + s.children, err
}

func hasArg(args []string, flag, value string) bool {
	for i := 0; i+1 < len(args); i++ {
		if args[i] == flag && args[i+1] == value {
			return true
		}
	}
	return false
}
