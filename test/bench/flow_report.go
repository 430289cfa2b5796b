package main

import (
	"fmt"
	"math"
	"time"
)

func printFlowReport(r *flowResult, o options) {
	n := len(r.batch)
	fmt.Println()
	fmt.Printf("flow: API create -> Running, %s\n", time.Now().UTC().Format("2006-01-02 15:04 MST"))
	fmt.Println("setup:    pkg/controlplane/server in this process (embedded etcd, scheduler, controllers), the agent binary")
	fmt.Printf("          joined as node %s with a node credential, on the test instance; pod as in the agent section\n", flowNode)
	fmt.Printf("series:   1 pod x %d (+1 untimed warm-up each side, deleted before the next), raw and flow alternating,\n", o.reps)
	fmt.Printf("          then %d raw pods at once, then %d API pods at once from %d clients; raw pods beside the running agent\n",
		len(r.raw.batch), n, n)
	fmt.Println("clock:    t0 = first CRI call (raw) / Create sent (flow); Running = a watch of the namespace delivers phase Running;")
	fmt.Println("          StartedAt = container StartedAt (CRI ContainerStatus); \"known running\" = StartContainer returned (raw) / Running (flow)")
	fmt.Println("          the CRI poller (ListContainers every 5 ms) runs in the 1-pod series only; in the bursts containers are listed once they run")
	fmt.Println()
	fmt.Printf("%-17s %-36s %4s %9s %9s\n", "ms", "", "n", "median", "p99")
	rows := []struct {
		group, label string
		d            dist
	}{
		{"raw CRI, 1 pod", "container StartedAt", distOf(r.raw.single, startedAfter)},
		{"", "StartContainer returned", distOf(r.raw.single, step(3))},
		{"flow, 1 pod", "Create returned", distOf(r.single, flowCreated)},
		{"", "bound (watch)", distOf(r.single, flowBound)},
		{"", "container StartedAt", distOf(r.single, flowStarted)},
		{"", "seen running (CRI poll)", distOf(r.single, flowObserved)},
		{"", "Running (watch)", distOf(r.single, flowRunning)},
		{fmt.Sprintf("raw CRI, %d pods", len(r.raw.batch)), "makespan, to last StartedAt", makespan(r.raw.batch, started)},
		{"", "makespan, to last StartContainer", makespan(r.raw.batch, startReturned)},
		{"", "per pod, StartedAt", distOf(r.raw.batch, startedAfter)},
		{"", "per pod, StartContainer returned", distOf(r.raw.batch, step(3))},
		{fmt.Sprintf("flow, %d pods", n), "makespan, to last StartedAt", makespan(r.batch, func(t flowTiming) time.Time { return t.started })},
		{"", "makespan, to last Running (watch)", makespan(r.batch, func(t flowTiming) time.Time { return t.running })},
		{"", "per pod, Create returned", distOf(r.batch, flowCreated)},
		{"", "per pod, bound (watch)", distOf(r.batch, flowBound)},
		{"", "per pod, StartedAt", distOf(r.batch, flowStarted)},
		{"", "per pod, Running (watch)", distOf(r.batch, flowRunning)},
	}
	for _, row := range rows {
		fmt.Printf("%-17s %-36s %4d %9.1f %9.1f\n", row.group, row.label, row.d.n, row.d.median, row.d.p99)
	}
	fmt.Println("(p99 is nearest-rank: the maximum when n < 100)")
	fmt.Println()

	fmt.Printf("%-38s %9s %9s %9s %7s\n", "flow vs raw CRI, ms", "raw", "flow", "diff", "ratio")
	compare := func(label string, raw, flow float64) {
		fmt.Printf("%-38s %9.1f %9.1f %+9.1f %7.2f\n", label, raw, flow, flow-raw, flow/raw)
	}
	rawKnown1, flowKnown1 := distOf(r.raw.single, step(3)), distOf(r.single, flowRunning)
	compare("1 pod median, to StartedAt", distOf(r.raw.single, startedAfter).median, distOf(r.single, flowStarted).median)
	compare("1 pod median, to known running", rawKnown1.median, flowKnown1.median)
	compare("1 pod p99, to known running", rawKnown1.p99, flowKnown1.p99)
	rawKnownN, flowKnownN := distOf(r.raw.batch, step(3)), distOf(r.batch, flowRunning)
	compare(fmt.Sprintf("%d pods makespan, to StartedAt", n), makespan(r.raw.batch, started).median,
		makespan(r.batch, func(t flowTiming) time.Time { return t.started }).median)
	compare(fmt.Sprintf("%d pods makespan, to known running", n), makespan(r.raw.batch, startReturned).median,
		makespan(r.batch, func(t flowTiming) time.Time { return t.running }).median)
	compare(fmt.Sprintf("%d pods per pod median, known running", n), rawKnownN.median, flowKnownN.median)
	compare(fmt.Sprintf("%d pods per pod p99, known running", n), rawKnownN.p99, flowKnownN.p99)
	fmt.Println()
	printFlowGoals(r, rawKnown1, flowKnown1, rawKnownN, flowKnownN)
	fmt.Println()
	printFlowAgent(r)
	fmt.Println()
	printBurstCPU(r)
	fmt.Println()
	printRequests(fmt.Sprintf("API requests of the %d-pod burst (apiserver_request_total, create to Running)", len(r.batch)),
		r.requests[1], r.requests[0], len(r.batch))
	printRequests("the agent's CRI calls in that time (kubelet_runtime_operations_total)", r.criCalls[1], r.criCalls[0], len(r.batch))
	fmt.Println()
	fmt.Printf("control plane start %.1f s; agent start -> node Ready and untainted %.1f s\n",
		r.cpStartup.Seconds(), r.nodeReady.Seconds())
	fmt.Printf("flow agent log: %s\n", flowAgentLogPath)
}

// printFlowGoals sets the figures against issue 15's goals, with the raw
// CRI side's "known running" (StartContainer returned) as the floor.
func printFlowGoals(r *flowResult, rawKnown1, flowKnown1, rawKnownN, flowKnownN dist) {
	n := len(r.batch)
	fmt.Printf("%-44s %9s %9s %7s %9s\n", "goals (issue 15), ms", "figure", "floor", "ratio", "goal")
	goal := func(label string, figure, floor, limit float64) {
		verdict := "met"
		if !(figure <= limit) {
			verdict = "NOT met"
		}
		fmt.Printf("%-44s %9.1f %9s %7s %9.1f   %s\n", label, figure, orDash("%.1f", floor), orDash("%.2f", figure/floor), limit, verdict)
	}
	goal("1 pod median, Running (watch)", flowKnown1.median, rawKnown1.median, 1.1*rawKnown1.median+50)
	rawSpan := makespan(r.raw.batch, startReturned).median
	goal(fmt.Sprintf("%d pods makespan, last Running (watch)", n),
		makespan(r.batch, func(t flowTiming) time.Time { return t.running }).median, rawSpan, 1.1*rawSpan)
	goal(fmt.Sprintf("%d pods per pod p99, Running (watch)", n), flowKnownN.p99, rawKnownN.p99, 1.1*rawKnownN.p99)
	goal("1 pod, max Running (watch) - StartedAt", maxMs(r.single, statusLag), math.NaN(), 1000)
	goal(fmt.Sprintf("%d pods, max Running (watch) - StartedAt", n), maxMs(r.batch, statusLag), math.NaN(), 1000)
	fmt.Println("(floor = raw CRI, StartContainer returned; goals: 1 pod <= 1.1 x floor + 50 ms, burst makespan and p99")
	fmt.Println(" <= 1.1 x floor, a started pod's status in the API within 1 s of its StartedAt)")
	fmt.Println("kubelet: not measured in this run (the bench does not run the upstream kubelet), so no kubelet figures are printed")
}

// printFlowAgent prints the agent's memory idle and with the burst's pods,
// and the CPU time their start cost it.
func printFlowAgent(r *flowResult) {
	n := len(r.batch)
	fmt.Printf("%-52s %11s %9s %12s\n", "flow agent", "RssAnon MiB", "CPU ms", "CPU ms/pod")
	fmt.Printf("%-52s %11.1f\n", "0 pods, node Ready", mib(r.idle.anonKiB))
	fmt.Printf("%-52s %11.1f\n", fmt.Sprintf("%d pods Running (watch), before their deletion", n), mib(r.burst.anonKiB))
	fmt.Printf("%-52s %11s %9.0f %12.1f\n", fmt.Sprintf("%d pods start, first Create -> last Running (watch)", n), "",
		ms(r.burst.cpu), ms(r.burst.cpu)/float64(n))
	fmt.Printf("(CPU = utime+stime from /proc/<pid>/stat, in %d ms ticks)\n", 1000/userHZ)
}

// printBurstCPU splits the CPU time of each burst by process: on a
// machine whose cores the burst saturates, what the flow adds to the
// runtime's work is what lengthens its makespan.
func printBurstCPU(r *flowResult) {
	fmt.Printf("%-34s %9s %9s %9s %9s %9s\n", fmt.Sprintf("CPU s, %d pods at once", len(r.batch)),
		"containerd", "shims", "agent", "bench", "sum")
	row := func(label string, p cpuParts) {
		fmt.Printf("%-34s %9.2f %9.2f %9.2f %9.2f %9.2f\n", label, p.containerd.Seconds(), p.shims.Seconds(),
			p.agent.Seconds(), p.bench.Seconds(), p.total().Seconds())
	}
	row("raw CRI, to the last pod running", r.rawCPU)
	row("flow, to the last Running (watch)", r.burstCPU)
	fmt.Println("(containerd with the CNI plugins it ran, shims with their runc calls, the agent, this process:")
	fmt.Println(" the control plane, the API clients and the CRI poller; utime+stime with waited-for children)")
}

// maxMs is the largest f over the pods, in milliseconds.
func maxMs[T any](ts []T, f func(T) time.Duration) float64 {
	if len(ts) == 0 {
		return math.NaN()
	}
	m := f(ts[0])
	for _, t := range ts {
		m = max(m, f(t))
	}
	return ms(m)
}

func orDash(format string, x float64) string {
	if math.IsNaN(x) {
		return "-"
	}
	return fmt.Sprintf(format, x)
}

func startReturned(t podTiming) time.Time { return t.steps[3] }

func flowCreated(t flowTiming) time.Duration  { return t.created.Sub(t.t0) }
func flowBound(t flowTiming) time.Duration    { return t.bound.Sub(t.t0) }
func flowStarted(t flowTiming) time.Duration  { return t.started.Sub(t.t0) }
func flowObserved(t flowTiming) time.Duration { return t.observed.Sub(t.t0) }
func flowRunning(t flowTiming) time.Duration  { return t.running.Sub(t.t0) }
func statusLag(t flowTiming) time.Duration    { return t.running.Sub(t.started) }

func (t flowTiming) start() time.Time { return t.t0 }
