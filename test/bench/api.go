package main

// The API server section: pkg/controlplane/server run in this process
// (temporary data dir, free loopback ports, embedded etcd) and driven by
// client-go typed clients with client-side rate limiting off. It needs
// neither root nor containerd.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"runtime/pprof"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/nodeagent/nodeagent/pkg/controlplane/server"
)

var (
	apiOnly       = flag.Bool("api-only", false, "run only the API server section")
	apiSkip       = flag.Bool("skip-api", false, "skip the API server section")
	apiPods       = flag.Int("api-pods", 10000, "pods in the namespace for the large list (at least 1000)")
	apiCPUProfile = flag.String("api-cpuprofile", "", "write a CPU profile of the API server section to this file")
)

const (
	apiClients   = 50   // concurrent clients
	apiSerial    = 200  // creates by the single client
	apiBatch     = 1000 // pods created by the concurrent clients first
	apiGets      = 500
	apiListReps  = 3
	apiWatchOps  = 200 // creates timed to their ADDED event
	apiWatchers  = 100 // fan-out watchers
	apiFanOutOps = 20  // updates seen by every watcher
	apiOpTimeout = 2 * time.Minute

	apiNSSerial = "bench-serial" // the single client's pods
	apiNSMain   = "bench"        // the 1k / -api-pods pods
	apiNSWatch  = "bench-watch"  // watch latency and fan-out
)

// runAPI starts the server, measures, prints its table and stops the
// server, removing its data dir.
func runAPI(ctx context.Context) (err error) {
	if *apiPods < apiBatch {
		return fmt.Errorf("-api-pods %d: at least %d", *apiPods, apiBatch)
	}
	begin := time.Now()
	dir, err := os.MkdirTemp("", "nodeagent-bench-api-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	ports, err := apiFreePorts(3)
	if err != nil {
		return err
	}
	ready := make(chan struct{})
	cfg := server.Config{
		DataDir:        dir,
		SecurePort:     ports[0],
		BindAddress:    "127.0.0.1",
		EtcdClientPort: ports[1],
		EtcdPeerPort:   ports[2],
		DisableAgent:   true,
		// Errors only: under load embedded etcd warns of slow requests.
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})),
		Ready:  ready,
	}
	srvCtx, stopServer := context.WithCancel(context.WithoutCancel(ctx))
	srvErr := make(chan error, 1)
	go func() { srvErr <- server.Run(srvCtx, cfg) }()
	defer func() {
		stopServer()
		if serr := <-srvErr; serr != nil && err == nil {
			err = fmt.Errorf("API server: %w", serr)
		}
	}()
	select {
	case <-ready:
	case serr := <-srvErr:
		srvErr <- serr // for the deferred stop
		return fmt.Errorf("API server did not start: %v", serr)
	case <-time.After(time.Minute):
		return errors.New("API server not ready after 1m")
	case <-ctx.Done():
		return ctx.Err()
	}
	startup := time.Since(begin)

	rc, err := clientcmd.BuildConfigFromFlags("", dir+"/"+server.KubeconfigFile)
	if err != nil {
		return err
	}
	rc.QPS, rc.Burst = 1e6, 1e6 // QPS 0 would mean client-go's default of 5
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return err
	}

	if *apiCPUProfile != "" {
		f, err := os.Create(*apiCPUProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}

	r := &apiResult{startup: startup}
	if err := apiMeasure(ctx, cs, r); err != nil {
		return err
	}
	r.total = time.Since(begin)
	printAPIReport(r)
	return nil
}

func apiFreePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	var ports []int
	for range n { // all held at once: n distinct ports
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
