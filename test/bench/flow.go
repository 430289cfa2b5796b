package main

// The flow section: pod creation through the whole product path, API
// create -> scheduler -> agent -> containerd -> status -> watch.
//
//  1. A fresh control plane in this process (cp.go, no agent of its own)
//     and the agent binary joined to it with a node credential
//     (server.WriteNodeKubeconfig, --kubeconfig), on the test instance.
//  2. Once the node is Ready and untainted, the series, each flow round
//     beside the raw CRI floor for the same work under the same load:
//     1 pod x -reps (+1 warm-up each side), a raw round then a flow round,
//     alternating, so that drift in the machine's load reaches both alike;
//     then -flow-pods raw pods at once, then as many API pods at once from
//     as many clients. The raw runner (raw.go) makes the requests the
//     agent makes for the API pod (its kube-api-access volume's bind
//     mount, the kubernetes Service's variables), with its pods' UID
//     under a label of the bench's own: the agent, like the kubelet, only
//     removes the sandboxes it can tie to a pod UID. API pods are created
//     without a node name, each deleted again before the next round.
//     Between rounds every pod has left the API and the runtime holds no
//     sandbox.
//  3. The agent's RssAnon once the node is Ready (0 pods) and with the
//     -flow-pods pods Running (watch) before their deletion, and its CPU
//     time (utime+stime) from the first Create to the last Running seen
//     by the watch.
//
// t0 is the first CRI call (raw) or the moment the Create request is sent
// (flow). The flow's end is when a watch of the namespace, opened before
// the series, delivers the pod with status.phase Running; beside it are
// when the watch saw it bound and, read from CRI as for the agent section,
// its container's StartedAt. The raw side's nearest end, "the caller knows
// it runs", is StartContainer returning.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/nodeagent/nodeagent/pkg/controlplane/server"
	"github.com/nodeagent/nodeagent/pkg/podworker/criconfig"
	nart "github.com/nodeagent/nodeagent/pkg/runtime"
	"github.com/nodeagent/nodeagent/test/framework"
)

var flowPods = flag.Int("flow-pods", 100, "pods created at once in the flow section (the node admits 110)")

const (
	flowNode      = "bench-flow-node"
	flowNamespace = "default"
)

// flowAgentLogPath keeps the flow agent's log after the run.
var flowAgentLogPath = filepath.Join(os.TempDir(), "nodeagent-bench-flow-agent.log")

// flowTiming is one API pod's way to Running.
type flowTiming struct {
	name     string
	t0       time.Time // Create sent
	created  time.Time // Create returned
	bound    time.Time // the watch saw spec.nodeName
	running  time.Time // the watch saw status.phase Running
	observed time.Time // the CRI poller saw its container running
	started  time.Time // container StartedAt from CRI
}

type flowResult struct {
	raw           series
	single, batch []flowTiming
	cpStartup     time.Duration
	nodeReady     time.Duration // agent started -> node Ready and untainted
	idle          usage         // the agent once the node is Ready, 0 pods
	burst         usage         // RssAnon with the burst Running; CPU time of its start
	// The CPU time of each burst, by part, from its start to its pods
	// running (raw: StartContainer returned and the poller saw them;
	// flow: the watch saw them Running).
	rawCPU, burstCPU cpuParts
	requests         [2]requestCounts // the flow burst's, before and after
	criCalls         [2]requestCounts // the agent's, likewise
}

// flowRunner drives the agent through the API.
type flowRunner struct {
	cs      kubernetes.Interface
	cri     *nart.Client
	watch   *runningWatch
	tracker *apiTracker
	pid     int // the agent's
	timeout time.Duration
	// cpu: sample the CPU parts and the API requests over start's window
	// into cpuUsed and requests.
	cpu      bool
	cpuUsed  cpuParts
	requests [2]requestCounts // before, after
	criCalls [2]requestCounts
	profiles *burstProfiles // stopped at the last Running
}

func runFlow(ctx context.Context, env *runtimeEnv) error {
	var cl cleanups // this section's, before the next section uses the instance
	defer cl.run()
	o := env.o
	var res flowResult

	// 1. Control plane and agent.
	fmt.Println("flow: starting the control plane and the agent ...")
	cp, err := startControlPlane(ctx, "nodeagent-bench-flow-")
	if err != nil {
		return err
	}
	cl.add("stop the flow's control plane", func(context.Context) error { return cp.stop() })
	res.cpStartup = cp.startup
	a, err := startFlowAgent(env.bin, env.base, cp)
	if err != nil {
		return err
	}
	agentUp := time.Now()
	cl.add("stop the flow's agent", func(ctx context.Context) error { return stopFlowAgent(ctx, a, cp.admin, env.cri) })
	if err := waitNodeReady(ctx, cp.admin, o.timeout); err != nil {
		return err
	}
	res.nodeReady = time.Since(agentUp)
	pid, err := findPidByArgs("--root-dir", a.RootDir)
	if err != nil {
		return err
	}
	if res.idle, err = readUsage(pid); err != nil {
		return fmt.Errorf("agent usage: %w", err)
	}
	trackCtx, stopTracking := context.WithCancel(ctx)
	defer stopTracking()
	tr, err := trackPods(trackCtx, cp.admin, flowNamespace)
	if err != nil {
		return err
	}
	f := &flowRunner{cs: cp.admin, cri: env.cri, watch: env.watch, tracker: tr, pid: pid, timeout: o.timeout}
	dns, err := criconfig.ParseResolvConf("/etc/resolv.conf")
	if err != nil {
		return err
	}
	raw := &rawRunner{cri: env.cri, watch: env.watch, dir: filepath.Join(env.base, "flow-raw"), dns: dns,
		timeout: o.timeout, sandboxes: map[string]*v1.Pod{}, apiPod: true, besideAgent: true}
	cl.add("remove the flow section's raw CRI pods", raw.removeAll)

	// 2. The series.
	fmt.Printf("flow: 1 pod x %d (+1 warm-up), raw CRI and API alternating ...\n", o.reps)
	rawNames, flowNames := seriesNames("fraw-one", o.reps+1), seriesNames("flow-one", o.reps+1)
	for i := range rawNames {
		rt, err := raw.runBatch(ctx, rawNames[i:i+1])
		if err != nil {
			return fmt.Errorf("raw CRI: %w", err)
		}
		ft, _, err := f.round(ctx, flowNames[i:i+1])
		if err != nil {
			return err
		}
		if i > 0 {
			res.raw.single = append(res.raw.single, rt...)
			res.single = append(res.single, ft...)
		}
	}
	fmt.Printf("flow: raw CRI, %d pods at once ...\n", *flowPods)
	cpu0, err := sampleCPU(pid)
	if err != nil {
		return err
	}
	raw.cpu = &cpuSampling{agentPid: pid}
	// The poller is paused during the bursts: listing up to 100 running
	// containers every 5 ms cost containerd and this process as much CPU
	// as the control plane, on both sides. The bursts' figures do not use
	// its sightings' times; their container IDs are listed once they run.
	env.watch.pause()
	defer env.watch.resume()
	if res.raw.batch, err = raw.runBatch(ctx, seriesNames("fraw-burst", *flowPods)); err != nil {
		return fmt.Errorf("raw CRI: %w", err)
	}
	res.rawCPU, raw.cpu = raw.cpu.end.sub(cpu0), nil
	if err := waitNoSandbox(ctx, env.cri, o.timeout); err != nil {
		return err
	}
	fmt.Printf("flow: API, %d pods at once ...\n", *flowPods)
	f.cpu = true
	var prof *burstProfiles
	if *flowProfileDir != "" {
		window := makespan(res.raw.batch, startReturned).median * 1.2 * float64(time.Millisecond)
		if prof, err = startBurstProfiles(ctx, cp.admin, flowNode, *flowProfileDir, time.Duration(window)); err != nil {
			return err
		}
		f.profiles = prof
	}
	if res.batch, res.burst, err = f.round(ctx, seriesNames("flow-burst", *flowPods)); err != nil {
		return err
	}
	res.burstCPU, res.requests, res.criCalls = f.cpuUsed, f.requests, f.criCalls
	if prof != nil {
		if err := prof.stop(); err != nil {
			return err
		}
	}
	printFlowReport(&res, o)
	return nil
}

// startFlowAgent runs the agent binary with a node credential for
// flowNode.
func startFlowAgent(bin, base string, cp *controlPlane) (*framework.Agent, error) {
	dir := filepath.Join(base, "flow-agent")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	kubeconfig := filepath.Join(dir, "node.kubeconfig")
	if err := server.WriteNodeKubeconfig(cp.dir, flowNode, cp.url, kubeconfig); err != nil {
		return nil, fmt.Errorf("node credential: %w", err)
	}
	a, err := framework.NewAgent(bin, dir)
	if err != nil {
		return nil, err
	}
	a.NodeName = flowNode
	a.ExtraArgs = []string{"--kubeconfig", kubeconfig}
	if err := a.Start(); err != nil {
		err = errors.Join(err, a.Stop()) // it may run without answering
		_ = os.WriteFile(flowAgentLogPath, []byte(a.Logs()), 0o644)
		return nil, fmt.Errorf("flow agent: %w (log: %s)", err, flowAgentLogPath)
	}
	return a, nil
}

// stopFlowAgent deletes every pod of the namespace through the API at
// once (grace 0), lets the agent remove their sandboxes, stops the agent
// and keeps its log. The run's sweep removes whatever is left.
func stopFlowAgent(ctx context.Context, a *framework.Agent, cs kubernetes.Interface, cri *nart.Client) error {
	zero := int64(0)
	err := cs.CoreV1().Pods(flowNamespace).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &zero}, metav1.ListOptions{})
	if err == nil {
		err = waitNoSandbox(ctx, cri, time.Minute)
	}
	err = errors.Join(err, a.Stop())
	if werr := os.WriteFile(flowAgentLogPath, []byte(a.Logs()), 0o644); werr != nil {
		err = errors.Join(err, werr)
	}
	return err
}

// waitNodeReady waits until the agent's node is Ready, schedulable and
// carries no NoSchedule or NoExecute taint, so the scheduler can place
// pods on it.
func waitNodeReady(ctx context.Context, cs kubernetes.Interface, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	last := "not registered"
	for {
		n, err := cs.CoreV1().Nodes().Get(ctx, flowNode, metav1.GetOptions{})
		switch {
		case err == nil:
			ready := slices.ContainsFunc(n.Status.Conditions, func(c v1.NodeCondition) bool {
				return c.Type == v1.NodeReady && c.Status == v1.ConditionTrue
			})
			blocking := slices.ContainsFunc(n.Spec.Taints, func(t v1.Taint) bool { return t.Effect != v1.TaintEffectPreferNoSchedule })
			if ready && !blocking && !n.Spec.Unschedulable {
				return nil
			}
			last = fmt.Sprintf("conditions %+v, taints %+v, unschedulable %t", n.Status.Conditions, n.Spec.Taints, n.Spec.Unschedulable)
		case !apierrors.IsNotFound(err):
			last = err.Error()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("node %s not Ready and untainted after %s: %s", flowNode, timeout, last)
		}
		if err := sleepCtx(ctx, 100*time.Millisecond); err != nil {
			return err
		}
	}
}

// waitNoSandbox waits until the test instance holds no sandbox.
func waitNoSandbox(ctx context.Context, cri *nart.Client, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		sbs, err := cri.ListPodSandbox(ctx, nil)
		if err == nil && len(sbs) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the runtime still holds %d sandbox(es) after %s (err: %v)", len(sbs), timeout, err)
		}
		if err := sleepCtx(ctx, 50*time.Millisecond); err != nil {
			return err
		}
	}
}

// flowPod is benchPod as an API pod for the scheduler to place.
func flowPod(name string) *v1.Pod {
	p := benchPod(name)
	p.Namespace = flowNamespace
	return p
}

// round creates the named pods at once, waits until the watch has seen
// every one Running, reads their containers' StartedAt, deletes them and
// waits until they have left the API and the runtime. The usage is the
// agent's RssAnon with the pods Running and its CPU time from the first
// Create to the last Running seen.
func (f *flowRunner) round(ctx context.Context, names []string) ([]flowTiming, usage, error) {
	t, u, err := f.start(ctx, names)
	return t, u, errors.Join(err, f.remove(ctx, names))
}

func (f *flowRunner) start(ctx context.Context, names []string) ([]flowTiming, usage, error) {
	pods := make([]*v1.Pod, len(names))
	for i, n := range names {
		pods[i] = flowPod(n)
	}
	before, err := readUsage(f.pid)
	if err != nil {
		return nil, usage{}, fmt.Errorf("agent usage: %w", err)
	}
	var cpu0 cpuParts
	if f.cpu {
		if f.requests[0], err = readRequestCounts(ctx, f.cs); err != nil {
			return nil, usage{}, err
		}
		if f.criCalls[0], err = readCRICounts(ctx, f.cs, flowNode); err != nil {
			return nil, usage{}, err
		}
		if cpu0, err = sampleCPU(f.pid); err != nil {
			return nil, usage{}, err
		}
	}
	c, err := createPods(ctx, f.cs, flowNamespace, pods, len(pods), f.timeout)
	if err != nil {
		return nil, usage{}, err
	}
	seen, err := f.tracker.wait(ctx, names, "Running (watch)", isRunning, f.timeout)
	f.profiles.stopBench()
	if err != nil {
		return nil, usage{}, err
	}
	u, err := readUsage(f.pid)
	if err != nil {
		return nil, usage{}, fmt.Errorf("agent usage: %w", err)
	}
	u.cpu -= before.cpu
	if f.cpu {
		cpu1, err := sampleCPU(f.pid)
		if err != nil {
			return nil, usage{}, err
		}
		f.cpuUsed = cpu1.sub(cpu0)
		if f.requests[1], err = readRequestCounts(ctx, f.cs); err != nil {
			return nil, usage{}, err
		}
		if f.criCalls[1], err = readCRICounts(ctx, f.cs, flowNode); err != nil {
			return nil, usage{}, err
		}
	}
	sightings, err := f.watch.wait(ctx, names, f.timeout)
	if err != nil {
		return nil, usage{}, fmt.Errorf("CRI poll: %w", err)
	}
	timings := make([]flowTiming, len(names))
	for i, n := range names {
		s := seen[n]
		if s.node != flowNode {
			return nil, usage{}, fmt.Errorf("pod %s bound to %q, want %s", n, s.node, flowNode)
		}
		timings[i] = flowTiming{name: n, t0: c.sent[i], created: c.returned[i], bound: s.bound, running: s.running,
			observed: sightings[n].at}
		if timings[i].started, err = startedAt(ctx, f.cri, sightings[n].containerID); err != nil {
			return nil, usage{}, err
		}
	}
	return timings, u, nil
}

// remove deletes the pods with their grace period (the agent confirms the
// deletion once their containers stopped) and waits until the watch saw
// them go and the runtime holds no sandbox.
func (f *flowRunner) remove(ctx context.Context, names []string) error {
	var errs []error
	var deleted []string // a pod never created is not waited for
	for _, n := range names {
		err := f.cs.CoreV1().Pods(flowNamespace).Delete(ctx, n, metav1.DeleteOptions{})
		switch {
		case err == nil:
			deleted = append(deleted, n)
		case !apierrors.IsNotFound(err):
			errs = append(errs, fmt.Errorf("delete pod %s: %w", n, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if _, err := f.tracker.wait(ctx, deleted, "deleted from the API", isGone, f.timeout); err != nil {
		return err
	}
	return waitNoSandbox(ctx, f.cri, f.timeout)
}
