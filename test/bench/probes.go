package main

// The probes section (issue 5): what probing costs in CPU time. The agent
// runs standalone on the test instance, as in the agent section, with
// probePods static pods of one busybox httpd container each, in two
// rounds of fresh pods:
//
//  1. without probes;
//  2. with an exec liveness probe ["true"] every 10 s and an httpGet
//     readiness probe (/ok on port 8080) every 1 s on every container.
//
// Each round waits until the agent's /pods shows every pod Running and
// Ready, pauses the CRI poller (watch.go), leaves everything alone for
// settle, and then measures over -probe-window the CPU time of
//
//   - the agent process (utime+stime);
//   - the test instance's containerd daemon (utime+stime; its children,
//     the shims' start-up commands, do not run while pods merely run);
//   - its shims, utime+stime+cutime+cstime: a shim runs runc exec for an
//     exec probe and reaps it and the probe's process (the shim is their
//     subreaper), so their time lands in the shim's children's time;
//   - for information, the pods' cgroups: the containers, among them
//     httpd answering the readiness probes, and again the exec probes'
//     processes, so this row is in no sum.
//
// The probes' cost is the difference of the two rounds, per second of
// wall time and per expected probe run.

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/nodeagent/nodeagent/test/framework"
)

var probeWindow = flag.Duration("probe-window", 60*time.Second, "window over which the probes section measures CPU time, per round (at least 10s)")

const (
	probePods           = 100 // the agent admits 110 (maxPods default)
	livenessPeriodSecs  = 10
	readinessPeriodSecs = 1
	probePort           = 8080
)

// probesAgentLogPath keeps the probes section's agent log after the run.
var probesAgentLogPath = filepath.Join(os.TempDir(), "nodeagent-bench-probes-agent.log")

// containerdPidFile is where hack/containerd.sh keeps the test daemon's pid.
var containerdPidFile = filepath.Join(filepath.Dir(framework.TestSocket), "containerd.pid")

// cpuRound is what one round measured over its window.
type cpuRound struct {
	wall              time.Duration
	agent, containerd time.Duration
	shims             time.Duration // with their reaped children
	nShims, shimsGone int           // at the window's start; exited during it (their time is lost)
	pods              time.Duration // the pods' cgroups
	podsOK            bool          // the pods' cgroup CPU could be read
	rss               usage         // the agent's, at the end of the window
	restarts          int           // container restarts over the round
	notReady          int           // pods not Ready at the end of the window
}

type probesResult struct{ without, with cpuRound }

func runProbes(ctx context.Context, env *runtimeEnv) error {
	var cl cleanups // this section's, before the next section uses the instance
	defer cl.run()
	o := env.o
	ctrd, err := containerdPid()
	if err != nil {
		return err
	}
	a, err := framework.NewAgent(env.bin, filepath.Join(env.base, "probes-agent"))
	if err != nil {
		return err
	}
	r := &agentRunner{a: a, cri: env.cri, watch: env.watch, timeout: o.timeout, logPath: probesAgentLogPath}
	cl.add("stop the probes section's agent", r.shutdown) // also an agent that started without answering
	fmt.Println("probes: starting the agent ...")
	if err := a.Start(); err != nil {
		return err
	}
	pid, err := findPidByArgs("--root-dir", a.RootDir)
	if err != nil {
		return err
	}
	var res probesResult
	rounds := []struct {
		prefix, what string
		probes       bool
		out          *cpuRound
	}{
		{"prb-off", "without probes", false, &res.without},
		{"prb-on", "with probes", true, &res.with},
	}
	for _, rd := range rounds {
		names := seriesNames(rd.prefix, probePods)
		if *rd.out, err = r.cpuRound(ctx, names, rd.what, rd.probes, pid, ctrd); err != nil {
			return fmt.Errorf("round %s: %w", rd.what, err)
		}
	}
	printProbesReport(&res, *probeWindow)
	return nil
}

// cpuRound starts the pods, waits until all are Running and Ready,
// measures the CPU time over the window and removes the pods again.
func (r *agentRunner) cpuRound(ctx context.Context, names []string, what string, probes bool, agentPid, ctrdPid int) (cpuRound, error) {
	var m cpuRound
	fmt.Printf("probes: %d pods %s, until all are Running and Ready ...\n", len(names), what)
	for _, n := range names {
		if _, err := r.publishManifest(n, probedManifest(n, probes)); err != nil {
			return m, err
		}
	}
	if err := r.waitReady(ctx, names); err != nil {
		return m, err
	}
	fmt.Printf("probes: CPU time over %s (after %s settling) ...\n", *probeWindow, settle)
	r.watch.pause() // 200 ListContainers a second would load containerd
	err := sleepCtx(ctx, settle)
	if err == nil {
		m, err = measureCPU(ctx, agentPid, ctrdPid, *probeWindow)
	}
	r.watch.resume()
	if err != nil {
		return m, err
	}
	pods, err := r.a.Pods()
	if err != nil {
		return m, err
	}
	m.restarts, m.notReady = podHealth(pods, podNames(names))
	return m, r.remove(ctx, names)
}

// probedPod is the section's pod: busybox httpd serving /www/ok on
// probePort, with or without the two probes.
func probedPod(name string, probes bool) *v1.Pod {
	p := benchPod(name) // grace 2 s
	c := &p.Spec.Containers[0]
	c.Command = []string{"sh", "-c",
		fmt.Sprintf("trap 'exit 0' TERM; mkdir -p /www && echo ok > /www/ok && httpd -f -p %d -h /www & wait", probePort)}
	if probes {
		c.LivenessProbe = &v1.Probe{
			ProbeHandler:  v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"true"}}},
			PeriodSeconds: livenessPeriodSecs,
		}
		c.ReadinessProbe = &v1.Probe{
			ProbeHandler:  v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Path: "/ok", Port: intstr.FromInt32(probePort)}},
			PeriodSeconds: readinessPeriodSecs,
		}
	}
	return p
}

func probedManifest(name string, probes bool) []byte { return mustJSON(probedPod(name, probes)) }

// waitReady polls /pods until every named pod is Running and Ready with
// every container running and ready.
func (r *agentRunner) waitReady(ctx context.Context, names []string) error {
	want := podNames(names)
	deadline := time.Now().Add(r.timeout)
	for {
		pods, err := r.a.Pods()
		left, why := len(want), ""
		if err == nil {
			for _, p := range pods {
				r.watch.addUID(string(p.UID)) // for removing the pod cgroups at the end
			}
			left, why = notReady(pods, want)
		} else {
			why = err.Error()
		}
		if left == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("agent: %d of %d pods not Running and Ready after %s (-timeout); e.g. %s",
				left, len(want), r.timeout, why)
		}
		if err := sleepCtx(ctx, 200*time.Millisecond); err != nil {
			return err
		}
	}
}

// notReady counts the wanted pods that are not Running and Ready and
// describes one of them.
func notReady(pods []v1.Pod, want []string) (int, string) {
	byName := make(map[string]*v1.Pod, len(pods))
	for i := range pods {
		byName[pods[i].Name] = &pods[i]
	}
	n, why := 0, ""
	for _, name := range want {
		p, ok := byName[name]
		switch {
		case !ok:
			n++
			why = fmt.Sprintf("%s not listed on /pods", name)
		case !podReady(p):
			n++
			why = fmt.Sprintf("%s: phase %s, conditions %s, containers %s", name, p.Status.Phase,
				conditionList(p.Status.Conditions), containerList(p.Status.ContainerStatuses))
		}
	}
	return n, why
}

func podReady(p *v1.Pod) bool {
	if p.Status.Phase != v1.PodRunning || len(p.Status.ContainerStatuses) != len(p.Spec.Containers) {
		return false
	}
	for _, cs := range p.Status.ContainerStatuses {
		if cs.State.Running == nil || !cs.Ready {
			return false
		}
	}
	for _, c := range p.Status.Conditions {
		if c.Type == v1.PodReady {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}

// podHealth sums the wanted pods' container restarts and counts those not
// Running and Ready.
func podHealth(pods []v1.Pod, want []string) (restarts, notReadyPods int) {
	notReadyPods, _ = notReady(pods, want)
	wanted := map[string]bool{}
	for _, n := range want {
		wanted[n] = true
	}
	for _, p := range pods {
		if wanted[p.Name] {
			for _, cs := range p.Status.ContainerStatuses {
				restarts += int(cs.RestartCount)
			}
		}
	}
	return restarts, notReadyPods
}

func conditionList(cs []v1.PodCondition) string {
	var parts []string
	for _, c := range cs {
		parts = append(parts, fmt.Sprintf("%s=%s", c.Type, c.Status))
	}
	return "[" + strings.Join(parts, " ") + "]"
}

func containerList(cs []v1.ContainerStatus) string {
	var parts []string
	for _, c := range cs {
		state := "waiting"
		switch {
		case c.State.Running != nil:
			state = "running"
		case c.State.Terminated != nil:
			state = "terminated"
		case c.State.Waiting != nil && c.State.Waiting.Reason != "":
			state = "waiting:" + c.State.Waiting.Reason
		}
		parts = append(parts, fmt.Sprintf("%s %s ready=%t restarts=%d", c.Name, state, c.Ready, c.RestartCount))
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// --- CPU time ---------------------------------------------------------------

// measureCPU reads the CPU time of the agent, containerd, its shims and
// the pods' cgroups before and after window, and the agent's RSS at the
// end.
func measureCPU(ctx context.Context, agentPid, ctrdPid int, window time.Duration) (cpuRound, error) {
	var m cpuRound
	a0, err := readStat(agentPid)
	if err != nil {
		return m, fmt.Errorf("agent: %w", err)
	}
	c0, err := readStat(ctrdPid)
	if err != nil {
		return m, fmt.Errorf("containerd: %w", err)
	}
	s0 := shimStats()
	p0, ok0 := podsCPU()
	t0 := time.Now()
	if err := sleepCtx(ctx, window); err != nil {
		return m, err
	}
	a1, err := readStat(agentPid)
	if err != nil {
		return m, fmt.Errorf("agent: %w", err)
	}
	c1, err := readStat(ctrdPid)
	if err != nil || c1.start != c0.start {
		return m, fmt.Errorf("the test containerd (pid %d) exited during the window (%v)", ctrdPid, err)
	}
	s1 := shimStats()
	p1, ok1 := podsCPU()
	m.wall = time.Since(t0)
	m.agent = a1.self - a0.self
	m.containerd = c1.self - c0.self
	m.nShims = len(s0)
	m.shims, m.shimsGone = shimDelta(s0, s1)
	m.pods, m.podsOK = p1-p0, ok0 && ok1
	if m.rss, err = readUsage(agentPid); err != nil {
		return m, fmt.Errorf("agent: %w", err)
	}
	return m, nil
}

// containerdPid is the test instance's containerd daemon, from
// hack/containerd.sh's pid file.
func containerdPid() (int, error) {
	b, err := os.ReadFile(containerdPidFile)
	if err != nil {
		return 0, fmt.Errorf("test containerd pid: %w", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0, fmt.Errorf("test containerd pid %q: %w", b, err)
	}
	cmd, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return 0, fmt.Errorf("test containerd (pid %d from %s): %w", pid, containerdPidFile, err)
	}
	if name, _, _ := strings.Cut(string(cmd), "\x00"); filepath.Base(name) != "containerd" {
		return 0, fmt.Errorf("pid %d from %s is %q, not containerd", pid, containerdPidFile, name)
	}
	return pid, nil
}

// shimStats reads the CPU time of the test instance's shims, by pid.
func shimStats() map[int]procStat {
	out := map[int]procStat{}
	for _, p := range processes() {
		if filepath.Base(p.args[0]) != "containerd-shim-runc-v2" || !hasAddress(p.args, framework.TestSocket) {
			continue
		}
		if s, err := readStat(p.pid); err == nil {
			out[p.pid] = s
		}
	}
	return out
}

// hasAddress reports whether a shim's command line holds -address sock.
func hasAddress(args []string, sock string) bool {
	for i, a := range args {
		switch {
		case (a == "-address" || a == "--address") && i+1 < len(args) && args[i+1] == sock:
			return true
		case a == "-address="+sock || a == "--address="+sock:
			return true
		}
	}
	return false
}

// shimDelta is the CPU time the shims spent between the snapshots, their
// reaped children's included. A shim that started during the window
// counts whole; one that exited is counted in gone, its time lost.
func shimDelta(before, after map[int]procStat) (cpu time.Duration, gone int) {
	for pid, b := range before {
		a, ok := after[pid]
		if !ok || a.start != b.start {
			gone++
			continue
		}
		cpu += a.self + a.children - b.self - b.children
	}
	for pid, a := range after {
		if b, ok := before[pid]; !ok || b.start != a.start {
			cpu += a.self + a.children
		}
	}
	return cpu, gone
}

// podsCPU is the CPU time of every best-effort pod under the test
// agents' cgroup root: cgroup v2 cpu.stat, or v1 cpuacct.usage.
func podsCPU() (time.Duration, bool) {
	dir := filepath.Join(cgroupRoot, "kubepods", "besteffort")
	if b, err := os.ReadFile(filepath.Join("/sys/fs/cgroup", dir, "cpu.stat")); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "usage_usec "); ok {
				n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
				return time.Duration(n) * time.Microsecond, err == nil
			}
		}
	}
	for _, ctrl := range []string{"cpuacct", "cpu,cpuacct", "cpuacct,cpu"} {
		if b, err := os.ReadFile(filepath.Join("/sys/fs/cgroup", ctrl, dir, "cpuacct.usage")); err == nil {
			n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
			return time.Duration(n), err == nil
		}
	}
	return 0, false
}
