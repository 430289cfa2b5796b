package main

import (
	"fmt"
	"time"

	"github.com/nodeagent/nodeagent/test/framework"
)

func printProbesReport(res *probesResult, window time.Duration) {
	wo, w := &res.without, &res.with
	fmt.Println()
	fmt.Printf("probes: probe CPU cost, %s\n", time.Now().UTC().Format("2006-01-02 15:04 MST"))
	fmt.Printf("setup:    the agent standalone on the test instance, %d static pods of 1 busybox httpd container each;\n", probePods)
	fmt.Printf("          a round without probes, then one with an exec liveness probe [true] every %d s and an httpGet\n", livenessPeriodSecs)
	fmt.Printf("          readiness probe /ok:%d every %d s on each container (fresh pods each round)\n", probePort, readinessPeriodSecs)
	fmt.Printf("window:   %s per round, from %s after all pods were Running and Ready; CRI poller paused\n", window, settle)
	fmt.Println("CPU:      utime+stime from /proc/<pid>/stat; the shims' with cutime+cstime (the runc exec and probe processes they reap)")
	fmt.Println()

	rate := func(r *cpuRound, d time.Duration) float64 { return ms(d) / r.wall.Seconds() }
	both := func(f func(*cpuRound) time.Duration) [2]float64 { return [2]float64{rate(wo, f(wo)), rate(w, f(w))} }
	agent := both(func(r *cpuRound) time.Duration { return r.agent })
	ctrd := both(func(r *cpuRound) time.Duration { return r.containerd })
	shims := both(func(r *cpuRound) time.Duration { return r.shims })
	ctrdShims := [2]float64{ctrd[0] + shims[0], ctrd[1] + shims[1]}
	total := [2]float64{agent[0] + ctrdShims[0], agent[1] + ctrdShims[1]}

	fmt.Printf("%-34s %9s %9s %9s\n", "CPU ms per s of wall time", "without", "with", "diff")
	row := func(label string, v [2]float64) {
		fmt.Printf("%-34s %9.2f %9.2f %+9.2f\n", label, v[0], v[1], v[1]-v[0])
	}
	row("agent", agent)
	row("containerd", ctrd)
	row(fmt.Sprintf("shims (%d, %d), with children", wo.nShims, w.nShims), shims)
	row("containerd + shims", ctrdShims)
	row("agent + containerd + shims", total)
	if wo.podsOK && w.podsOK {
		row("pods' cgroups (in no sum)", both(func(r *cpuRound) time.Duration { return r.pods }))
	} else {
		fmt.Printf("%-34s %9s %9s %9s\n", "pods' cgroups (in no sum)", "-", "-", "-")
	}
	fmt.Println("(1 ms per s is 0.1% of one CPU; the pods' cgroups hold httpd answering the probes and, again, the exec probes)")
	fmt.Println()

	runsPerSec := float64(probePods) * (1.0/livenessPeriodSecs + 1.0/readinessPeriodSecs)
	fmt.Printf("probe runs expected: %.0f per s (%d pods x (1/%d s exec + 1/%d s httpGet)), %.0f over %s\n",
		runsPerSec, probePods, livenessPeriodSecs, readinessPeriodSecs, runsPerSec*window.Seconds(), window)
	fmt.Println("CPU us per probe run (diff / runs)")
	perRun := func(label string, v [2]float64, perSec float64) {
		fmt.Printf("  %-32s %9.1f\n", label, (v[1]-v[0])*1000/perSec)
	}
	perRun("agent", agent, runsPerSec)
	perRun("containerd + shims", ctrdShims, runsPerSec)
	perRun("agent + containerd + shims", total, runsPerSec)
	// Only the exec probes go through containerd; httpGet goes from the
	// agent to the pod.
	perRun("containerd + shims, per exec run", ctrdShims, float64(probePods)/livenessPeriodSecs)
	fmt.Println()

	fmt.Printf("%-34s %9s %9s\n", "at the end of the window", "without", "with")
	fmt.Printf("%-34s %9.1f %9.1f\n", "agent VmRSS MiB", mib(wo.rss.rssKiB), mib(w.rss.rssKiB))
	fmt.Printf("%-34s %9.1f %9.1f\n", "agent RssAnon MiB", mib(wo.rss.anonKiB), mib(w.rss.anonKiB))
	fmt.Printf("%-34s %9d %9d\n", "container restarts", wo.restarts, w.restarts)
	fmt.Printf("%-34s %9d %9d\n", "pods not Ready", wo.notReady, w.notReady)
	for _, r := range []*cpuRound{wo, w} {
		if r.nShims < probePods {
			fmt.Printf("warning: %d containerd-shim-runc-v2 processes on %s for %d pods: shims not found are not counted\n",
				r.nShims, framework.TestSocket, probePods)
		}
		if r.shimsGone > 0 {
			fmt.Printf("warning: %d shim(s) exited during a window: their CPU time is missing\n", r.shimsGone)
		}
	}
	if w.restarts > 0 || w.notReady > 0 {
		fmt.Println("warning: probes failed during the round with probes: its figures include restarts or failing probes")
	}
	fmt.Printf("probes agent log: %s\n", probesAgentLogPath)
}
