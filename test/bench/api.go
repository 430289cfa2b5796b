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
	"os"
	"runtime/pprof"
	"time"
)

var (
	apiOnly       = flag.Bool("api-only", false, "run only the API server section (as -only api)")
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
	cp, err := startControlPlane(ctx, "nodeagent-bench-api-")
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, cp.stop()) }()

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

	r := &apiResult{startup: cp.startup}
	if err := apiMeasure(ctx, cp.admin, r); err != nil {
		return err
	}
	r.total = time.Since(begin)
	printAPIReport(r)
	return nil
}
