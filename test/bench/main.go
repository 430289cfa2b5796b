// Command bench measures what the agent costs on top of the container
// runtime when it starts static pods, and what it costs to keep running.
//
//	go run ./test/bench -pods 30 -reps 20
//
// Everything runs in one process against the dedicated "test" containerd
// instance (hack/containerd.sh), in this order:
//
//  1. Raw CRI floor, measured before any agent runs on the instance (an
//     agent removes sandboxes it does not know): RunPodSandbox, ImageStatus,
//     CreateContainer and StartContainer issued directly over gRPC for a
//     one-container busybox pod, with the configuration the agent would
//     send for the same manifest (kubelet labels and annotations, pod log
//     directory, DNS from /etc/resolv.conf, hostname, no ports, the same
//     cgroup parent scheme <cgroupRoot>/kubepods/besteffort/pod<uid>, the
//     same QoS resources and security context). One pod at a time ×reps,
//     then -pods pods at once from as many goroutines.
//  2. The agent (built from this tree, run through test/framework) starting
//     the same pods from manifests: one at a time ×reps, then -pods
//     manifests written together.
//  3. The agent's RSS and CPU time with 0 and with -pods pods running.
//  4. The API server section (api*.go; -api-only, -skip-api, -api-pods).
//
// Why the two sides are comparable: both are timed from the same kind of
// start point to the same end point, read from the runtime. The start is
// the first CRI call (raw) or the rename that publishes the manifest
// (agent); the end is the container's StartedAt from CRI ContainerStatus,
// the moment containerd started the process, on the same clock. The raw
// side also reports when StartContainer returned. The same 5 ms
// ListContainers poller runs during both phases, so both see the same
// extra load on containerd, and it gives a second, "observed running"
// figure for each. One untimed warm-up pod precedes each series.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	nart "github.com/nodeagent/nodeagent/pkg/runtime"
	"github.com/nodeagent/nodeagent/test/framework"
)

type options struct {
	pods    int
	reps    int
	window  time.Duration
	timeout time.Duration
}

func main() {
	var o options
	flag.IntVar(&o.pods, "pods", 30, "pods started at once in the concurrent runs")
	flag.IntVar(&o.reps, "reps", 20, "repetitions of the one-pod runs")
	flag.DurationVar(&o.window, "cpu-window", 10*time.Second, "window over which the agent's CPU time is measured")
	flag.DurationVar(&o.timeout, "timeout", 3*time.Minute, "limit for any single wait")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		<-ctx.Done()
		stop() // a second Ctrl-C ends the program at once
	}()
	if err := run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, o options) (err error) {
	if *apiOnly {
		return interrupted(ctx, runAPI(ctx))
	}
	if os.Geteuid() != 0 {
		return errors.New("needs root (containerd, runc, CNI)")
	}
	var cl cleanups
	defer func() {
		if ctx.Err() != nil {
			fmt.Println("interrupted: cleaning up ...")
		}
		cl.run()
	}()

	base, err := os.MkdirTemp("", "nodeagent-bench-")
	if err != nil {
		return err
	}
	cl.add("remove "+base, func(context.Context) error { return os.RemoveAll(base) })

	fmt.Println("building the agent ...")
	bin, err := framework.BuildAgent(base) // before any timing: the build loads both cores
	if err != nil {
		return err
	}
	stopContainerd, err := framework.StartContainerd()
	if err != nil {
		return err
	}
	cl.add("stop test containerd (if the bench started it)", func(context.Context) error { return stopContainerd() })
	cri, err := framework.DialCRI()
	if err != nil {
		return err
	}
	cl.add("close CRI connection", func(context.Context) error { return cri.Close() })
	if err := requireEmptyRuntime(ctx, cri); err != nil {
		return err
	}
	watch := newRunningWatch(cri)
	cl.add("remove pod cgroups", watch.removePodCgroups)
	cl.add("sweep the test instance", func(c context.Context) error { return sweepRuntime(c, cri, watch) })
	go watch.loop(ctx)
	if err := printHeader(ctx, cri, o); err != nil {
		return err
	}

	raw, err := measureRaw(ctx, &cl, cri, watch, base, o)
	if err != nil {
		return interrupted(ctx, err)
	}
	ag, err := measureAgent(ctx, &cl, cri, watch, bin, base, o)
	if err != nil {
		return interrupted(ctx, err)
	}
	printReport(raw, ag, o)
	if *apiSkip {
		return nil
	}
	fmt.Println()
	return interrupted(ctx, runAPI(ctx)) // flags in api.go
}

// interrupted replaces the errors a Ctrl-C causes in the middle of a
// measurement by a plain statement.
func interrupted(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return errors.New("interrupted")
	}
	return err
}

// requireEmptyRuntime refuses to run when the test instance holds pods:
// someone else (an e2e run, another agent) is using it, and the bench
// would destroy their pods or they ours.
func requireEmptyRuntime(ctx context.Context, cri *nart.Client) error {
	sbs, err := cri.ListPodSandbox(ctx, nil)
	if err != nil {
		return err
	}
	if len(sbs) > 0 {
		return fmt.Errorf("the test containerd instance holds %d sandbox(es): another test or agent is using it; "+
			"run the bench when it is idle (or `make containerd-test-stop` first)", len(sbs))
	}
	if pids := otherAgents(); len(pids) > 0 {
		fmt.Printf("warning: other nodeagent processes are running (pids %v); their CPU use skews the figures\n", pids)
	}
	return nil
}

// cleanups run in reverse order of registration, each with its own
// deadline, also after Ctrl-C (the run's context is then cancelled).
type cleanups struct{ steps []cleanupStep }

type cleanupStep struct {
	what string
	fn   func(context.Context) error
}

func (c *cleanups) add(what string, fn func(context.Context) error) {
	c.steps = append(c.steps, cleanupStep{what, fn})
}

func (c *cleanups) run() {
	for i := len(c.steps) - 1; i >= 0; i-- {
		s := c.steps[i]
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		if err := s.fn(ctx); err != nil {
			fmt.Fprintf(os.Stderr, "cleanup: %s: %v\n", s.what, err)
		}
		cancel()
	}
}

// sweepRuntime removes every sandbox left on the test instance; it belongs
// to the bench while the bench runs (see requireEmptyRuntime).
func sweepRuntime(ctx context.Context, cri *nart.Client, watch *runningWatch) error {
	sbs, err := cri.ListPodSandbox(ctx, nil)
	if err != nil {
		return err
	}
	var errs []error
	for _, sb := range sbs {
		watch.addUID(sb.GetMetadata().GetUid())
		_ = cri.StopPodSandbox(ctx, sb.Id)
		if err := cri.RemovePodSandbox(ctx, sb.Id); err != nil {
			errs = append(errs, err)
		}
	}
	if len(sbs) > 0 {
		fmt.Printf("cleanup: removed %d leftover sandbox(es)\n", len(sbs))
	}
	return errors.Join(errs...)
}
