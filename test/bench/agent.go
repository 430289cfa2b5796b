package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	v1 "k8s.io/api/core/v1"

	nart "github.com/nodeagent/nodeagent/pkg/runtime"
	"github.com/nodeagent/nodeagent/test/framework"
)

// settle is how long the agent is left alone before its resource use is
// measured, so that it is in steady state.
const settle = 5 * time.Second

// agentLogPath keeps the agent's log after the run, for reading timings.
var agentLogPath = filepath.Join(os.TempDir(), "nodeagent-bench-agent.log")

type agentResult struct {
	series
	rssAtStart  int64 // KiB
	anonAtStart int64 // KiB
	idle, busy  usage // with 0 pods after the run, with all batch pods running
	peakRSS     int64 // KiB, VmHWM at the end
	log         string
}

// agentRunner drives one agent through manifests and reads the results
// back from the runtime.
type agentRunner struct {
	a       *framework.Agent
	cri     *nart.Client
	watch   *runningWatch
	timeout time.Duration
	logPath string // where shutdown keeps the agent's log
}

func measureAgent(ctx context.Context, cl *cleanups, cri *nart.Client, watch *runningWatch, bin, base string, o options) (agentResult, error) {
	var res agentResult
	a, err := framework.NewAgent(bin, filepath.Join(base, "agent"))
	if err != nil {
		return res, err
	}
	fmt.Println("agent: starting ...")
	if err := a.Start(); err != nil {
		return res, err
	}
	r := &agentRunner{a: a, cri: cri, watch: watch, timeout: o.timeout, logPath: agentLogPath}
	cl.add("stop the agent", r.shutdown)
	pid, err := findPidByArgs("--root-dir", a.RootDir)
	if err != nil {
		return res, err
	}
	if u, err := readUsage(pid); err == nil {
		res.rssAtStart = u.rssKiB
		res.anonAtStart = u.anonKiB
	}

	fmt.Printf("agent: 1 pod x %d (+1 warm-up) ...\n", o.reps)
	for i, name := range seriesNames("ag1", o.reps+1) {
		t, err := r.runOnce(ctx, []string{name})
		if err != nil {
			return res, err
		}
		if i > 0 {
			res.single = append(res.single, t...)
		}
	}
	fmt.Printf("agent: %d pods at once, then resource use with them running and with none ...\n", o.pods)
	if res.busy, res.idle, res.batch, err = r.runBatchWithUsage(ctx, pid, seriesNames(fmt.Sprintf("ag%d", o.pods), o.pods), o.window); err != nil {
		return res, err
	}
	if u, err := readUsage(pid); err == nil {
		res.peakRSS = u.hwmKiB
	}
	res.log = a.Logs()
	return res, nil
}

// runOnce starts the named pods and removes them again.
func (r *agentRunner) runOnce(ctx context.Context, names []string) ([]podTiming, error) {
	t, err := r.start(ctx, names)
	return t, errors.Join(err, r.remove(ctx, names))
}

// runBatchWithUsage starts the pods, measures the agent's resource use
// with them running, removes them and measures it again with none.
func (r *agentRunner) runBatchWithUsage(ctx context.Context, pid int, names []string, window time.Duration) (busy, idle usage, t []podTiming, err error) {
	if t, err = r.start(ctx, names); err != nil {
		return busy, idle, t, errors.Join(err, r.remove(ctx, names))
	}
	if err = sleepCtx(ctx, settle); err == nil {
		busy, err = measureUsage(ctx, pid, window)
	}
	if err = errors.Join(err, r.remove(ctx, names)); err != nil {
		return busy, idle, t, err
	}
	if err = sleepCtx(ctx, settle); err == nil {
		idle, err = measureUsage(ctx, pid, window)
	}
	return busy, idle, t, err
}

// start publishes one manifest per name and waits until every pod's
// container runs and the agent reports every pod Running.
func (r *agentRunner) start(ctx context.Context, names []string) ([]podTiming, error) {
	timings := make([]podTiming, len(names))
	for i, name := range names {
		t0, err := r.publish(name)
		if err != nil {
			return nil, err
		}
		timings[i] = podTiming{name: name, t0: t0}
	}
	if err := completeTimings(ctx, r.cri, r.watch, timings, r.timeout); err != nil {
		return nil, err
	}
	// Polled only now, so the polling does not load the agent during the
	// timed start; the figure is the status lag on top of the start.
	return timings, r.waitReported(ctx, timings)
}

// publish writes a manifest atomically; t0 is taken just before the rename
// that makes it visible to the agent.
func (r *agentRunner) publish(name string) (time.Time, error) {
	return r.publishManifest(name, manifest(name))
}

// publishManifest writes content as the manifest of name, atomically.
func (r *agentRunner) publishManifest(name string, content []byte) (time.Time, error) {
	tmp := filepath.Join(r.a.Dir, "."+name+".tmp")
	if err := os.WriteFile(tmp, content, 0o644); err != nil {
		return time.Time{}, err
	}
	t0 := time.Now()
	return t0, os.Rename(tmp, r.manifestPath(name))
}

func (r *agentRunner) manifestPath(name string) string {
	return filepath.Join(r.a.ManifestDir, name+".json")
}

// waitReported polls /pods every 20 ms until every pod is Running with
// all containers running, recording when each first was.
func (r *agentRunner) waitReported(ctx context.Context, timings []podTiming) error {
	deadline := time.Now().Add(r.timeout)
	for {
		pods, err := r.a.Pods()
		now := time.Now()
		left := 0
		for i := range timings {
			if timings[i].reported.IsZero() && err == nil && reportedRunning(pods, podName(timings[i].name)) {
				timings[i].reported = now
			}
			if timings[i].reported.IsZero() {
				left++
			}
		}
		if left == 0 {
			return nil
		}
		if now.After(deadline) {
			return fmt.Errorf("agent: %d pods not reported Running after %s", left, r.timeout)
		}
		if err := sleepCtx(ctx, 20*time.Millisecond); err != nil {
			return err
		}
	}
}

func reportedRunning(pods []v1.Pod, name string) bool {
	for _, p := range pods {
		if p.Name != name {
			continue
		}
		if p.Status.Phase != v1.PodRunning || len(p.Status.ContainerStatuses) != len(p.Spec.Containers) {
			return false
		}
		for _, cs := range p.Status.ContainerStatuses {
			if cs.State.Running == nil {
				return false
			}
		}
		return true
	}
	return false
}

// remove deletes the manifests and waits until the agent no longer lists
// the pods and has removed their sandboxes.
func (r *agentRunner) remove(ctx context.Context, names []string) error {
	for _, n := range names {
		if err := os.Remove(r.manifestPath(n)); err != nil && !os.IsNotExist(err) {
			return err
		}
	}
	deadline := time.Now().Add(r.timeout)
	for {
		left, err := r.podsLeft(ctx, names)
		if err == nil && left == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("agent: %d pods not cleaned up after %s (err: %v)", left, r.timeout, err)
		}
		if err := sleepCtx(ctx, 50*time.Millisecond); err != nil {
			return err
		}
	}
}

// podsLeft counts the named pods still listed by the agent or still
// holding a sandbox in the runtime.
func (r *agentRunner) podsLeft(ctx context.Context, names []string) (int, error) {
	want := map[string]bool{}
	for _, n := range podNames(names) {
		want[n] = true
	}
	pods, err := r.a.Pods()
	if err != nil {
		return len(names), err
	}
	sbs, err := r.cri.ListPodSandbox(ctx, nil)
	if err != nil {
		return len(names), err
	}
	left := map[string]bool{}
	for _, p := range pods {
		if want[p.Name] {
			left[p.Name] = true
		}
	}
	for _, sb := range sbs {
		if n := sb.Labels[nart.LabelPodName]; want[n] {
			left[n] = true
		}
	}
	return len(left), nil
}

// shutdown removes every manifest, lets the agent remove its pods (unless
// it is gone already, e.g. killed by the terminal's Ctrl-C), stops it and
// keeps its log.
func (r *agentRunner) shutdown(ctx context.Context) error {
	entries, _ := os.ReadDir(r.a.ManifestDir)
	for _, e := range entries {
		_ = os.Remove(filepath.Join(r.a.ManifestDir, e.Name()))
	}
	for ctx.Err() == nil {
		sbs, err := r.cri.ListPodSandbox(ctx, nil)
		if _, apiErr := r.a.Pods(); err != nil || apiErr != nil || len(sbs) == 0 {
			break
		}
		_ = sleepCtx(ctx, 200*time.Millisecond)
	}
	err := r.a.Stop()
	if werr := os.WriteFile(r.logPath, []byte(r.a.Logs()), 0o644); werr != nil {
		err = errors.Join(err, werr)
	}
	return err
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}
