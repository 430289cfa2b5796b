package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"time"

	"k8s.io/client-go/kubernetes"
)

var flowProfileDir = flag.String("flow-cpuprofile", "", "write CPU profiles of the flow burst into this directory: agent.pprof (from its /debug/pprof through the API server's node proxy) and bench.pprof (this process: the control plane)")

// burstProfiles profiles the agent and this process while a burst runs;
// stop ends both and writes them. The agent's profile has a fixed length,
// window, which should cover the burst.
type burstProfiles struct {
	dir   string
	bench *os.File
	agent chan error
}

func startBurstProfiles(ctx context.Context, cs kubernetes.Interface, node, dir string, window time.Duration) (*burstProfiles, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	f, err := os.Create(filepath.Join(dir, "bench.pprof"))
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		return nil, errors.Join(err, f.Close())
	}
	p := &burstProfiles{dir: dir, bench: f, agent: make(chan error, 1)}
	go func() {
		secs := strconv.Itoa(int(window.Seconds()) + 1)
		b, err := cs.CoreV1().RESTClient().Get().AbsPath("/api/v1/nodes", node, "proxy/debug/pprof/profile").
			Param("seconds", secs).Timeout(window + time.Minute).DoRaw(ctx)
		if err == nil {
			err = os.WriteFile(filepath.Join(dir, "agent.pprof"), b, 0o644)
		}
		p.agent <- err
	}()
	return p, nil
}

// stopBench ends this process's profile (at the burst's last Running,
// before the pods' deletion).
func (p *burstProfiles) stopBench() {
	if p != nil {
		pprof.StopCPUProfile()
	}
}

func (p *burstProfiles) stop() error {
	pprof.StopCPUProfile() // a no-op when stopBench did
	err := p.bench.Close()
	if aerr := <-p.agent; aerr != nil {
		err = errors.Join(err, fmt.Errorf("the agent's profile: %w", aerr))
	}
	fmt.Printf("flow: CPU profiles of the burst in %s (go tool pprof %s)\n", p.dir, filepath.Join(p.dir, "agent.pprof"))
	return err
}
