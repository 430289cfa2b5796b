package main

import (
	"bufio"
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"runtime"
	"sort"
	"strings"
	"time"

	nart "github.com/nodeagent/nodeagent/pkg/runtime"
	"github.com/nodeagent/nodeagent/test/framework"
)

// Targets printed beside the figures; they are not assertions.
const (
	targetOverhead = 0.10 // agent adds at most 10% over raw CRI
	targetRSSMiB   = 40
)

func printHeader(ctx context.Context, cri *nart.Client) error {
	v, err := cri.Version(ctx, "v1")
	if err != nil {
		return err
	}
	fmt.Printf("nodeagent pod start benchmark, %s\n", time.Now().UTC().Format("2006-01-02 15:04 MST"))
	fmt.Printf("machine:  nproc %d (%s), kernel %s, load average at start %s\n",
		runtime.NumCPU(), cpuModel(), firstLine("/proc/sys/kernel/osrelease"), loadAvg())
	fmt.Printf("runtime:  %s %s (CRI %s), %s, test instance %s\n",
		v.RuntimeName, v.RuntimeVersion, v.RuntimeApiVersion, runcVersion(), framework.TestSocket)
	fmt.Printf("pod:      1 busybox container (sh loop), image %s present, bridge CNI, best-effort\n", framework.BusyboxImage)
	fmt.Println()
	return nil
}

func printAgentHeader(o options) {
	fmt.Printf("agent section: 1 pod x %d (+1 untimed warm-up each side), %d pods at once; CRI poll every %s on both sides\n",
		o.reps, o.pods, pollEvery)
	fmt.Println("clock:    t0 = first CRI call (raw) / manifest rename (agent); end = container StartedAt (CRI ContainerStatus)")
	fmt.Println()
}

func printReport(raw series, ag agentResult, o options) {
	fmt.Println()
	fmt.Printf("%-17s %-36s %4s %9s %9s\n", "ms", "", "n", "median", "p99")
	printStarts(raw, ag)
	fmt.Println("(p99 is nearest-rank: the maximum when n < 100)")
	fmt.Println()
	printComparison(raw, ag, o)
	fmt.Println()
	printTimeline(raw, ag)
	fmt.Println()
	printResources(ag, o)
	fmt.Printf("\nagent log: %s\n", agentLogPath)
}

func printStarts(raw series, ag agentResult) {
	rows := []struct {
		group, label string
		d            dist
	}{
		{"raw CRI, 1 pod", "container StartedAt", distOf(raw.single, startedAfter)},
		{"", "StartContainer returned", distOf(raw.single, step(3))},
		{"", "seen running (CRI poll)", distOf(raw.single, observedAfter)},
		{"  calls", "RunPodSandbox", distOf(raw.single, stepDelta(0))},
		{"", "ImageStatus", distOf(raw.single, stepDelta(1))},
		{"", "CreateContainer", distOf(raw.single, stepDelta(2))},
		{"", "StartContainer", distOf(raw.single, stepDelta(3))},
		{"agent, 1 pod", "container StartedAt", distOf(ag.single, startedAfter)},
		{"", "seen running (CRI poll)", distOf(ag.single, observedAfter)},
		{"", "reported Running on /pods", distOf(ag.single, reportedAfter)},
		{fmt.Sprintf("raw CRI, %d pods", len(raw.batch)), "makespan, to last StartedAt", makespan(raw.batch, started)},
		{"", "per pod, StartedAt", distOf(raw.batch, startedAfter)},
		{fmt.Sprintf("agent, %d pods", len(ag.batch)), "makespan, to last StartedAt", makespan(ag.batch, started)},
		{"", "per pod, StartedAt", distOf(ag.batch, startedAfter)},
		{"", "makespan, to last Running on /pods", makespan(ag.batch, reported)},
	}
	for _, r := range rows {
		fmt.Printf("%-17s %-36s %4d %9.1f %9.1f\n", r.group, r.label, r.d.n, r.d.median, r.d.p99)
	}
}

func printComparison(raw series, ag agentResult, o options) {
	fmt.Printf("%-30s %9s %9s %9s %7s   target: agent adds at most %.0f%% over raw CRI\n",
		"agent vs raw (StartedAt)", "raw", "agent", "diff", "ratio", targetOverhead*100)
	compare := func(label string, r, a float64) {
		verdict := "met"
		if a > r*(1+targetOverhead) {
			verdict = "NOT met"
		}
		fmt.Printf("%-30s %9.1f %9.1f %+9.1f %7.2f   %s\n", label, r, a, a-r, a/r, verdict)
	}
	compare("1 pod, median", distOf(raw.single, startedAfter).median, distOf(ag.single, startedAfter).median)
	compare(fmt.Sprintf("%d pods, makespan", o.pods), makespan(raw.batch, started).median, makespan(ag.batch, started).median)
}

// printTimeline places the agent's steps for one pod, from its log's
// timestamps (millisecond resolution), beside the raw calls.
func printTimeline(raw series, ag agentResult) {
	lines := logLines(ag.log)
	at := func(match ...string) float64 {
		var xs []float64
		for _, t := range ag.single {
			if ts, ok := firstLogTime(lines, podName(t.name), match); ok {
				xs = append(xs, ms(ts.Sub(t.t0)))
			}
		}
		return median(xs)
	}
	fmt.Println("1 pod, median ms after t0        agent (log)   raw CRI (call returned)")
	rows := []struct {
		label string
		agent float64
		raw   float64
	}{
		{"worker computed its plan", at("msg=sync"), math.NaN()},
		{"sandbox created", at(`msg="sandbox created"`), distOf(raw.single, step(0)).median},
		{"image checked", at("reason=Pulled"), distOf(raw.single, step(1)).median},
		{"container created", at("reason=Created"), distOf(raw.single, step(2)).median},
		{"container started", at("reason=Started"), distOf(raw.single, step(3)).median},
		{"container StartedAt (runtime)", distOf(ag.single, startedAfter).median, distOf(raw.single, startedAfter).median},
		{"Running on /pods", distOf(ag.single, reportedAfter).median, math.NaN()},
	}
	for _, r := range rows {
		fmt.Printf("  %-30s %11s   %11s\n", r.label, num(r.agent), num(r.raw))
	}
}

func printResources(ag agentResult, o options) {
	fmt.Printf("%-30s %9s %11s %14s   target: RSS under %d MiB\n", "agent resources", "VmRSS MiB", "RssAnon MiB",
		fmt.Sprintf("CPU ms/%s", o.window), targetRSSMiB)
	res := func(label string, u usage) {
		verdict := "met"
		if mib(u.rssKiB) >= targetRSSMiB {
			verdict = "NOT met"
		}
		fmt.Printf("%-30s %9.1f %11.1f %14.0f   %s\n", label, mib(u.rssKiB), mib(u.anonKiB), ms(u.cpu), verdict)
	}
	fmt.Printf("%-30s %9.1f %11.1f\n", "just started", mib(ag.rssAtStart), mib(ag.anonAtStart))
	res(fmt.Sprintf("%d pods running", len(ag.batch)), ag.busy)
	res("0 pods (after the run)", ag.idle)
	fmt.Printf("%-30s %9.1f\n", "peak over the run (VmHWM)", mib(ag.peakRSS))
	fmt.Println("(VmRSS = RssAnon, the agent's own memory, + RssFile, pages of the shared nodeagent binary, which links the control plane too)")
}

// --- statistics ---------------------------------------------------------

type dist struct {
	n           int
	median, p99 float64
}

// distOf summarises f over the pods, in milliseconds.
func distOf[T any](ts []T, f func(T) time.Duration) dist {
	xs := make([]float64, 0, len(ts))
	for _, t := range ts {
		xs = append(xs, ms(f(t)))
	}
	return dist{n: len(xs), median: median(xs), p99: percentile(xs, 0.99)}
}

// timed is a pod's measurement with its own clock start (t0).
type timed interface{ start() time.Time }

func (t podTiming) start() time.Time { return t.t0 }

// makespan is from the first pod's t0 to the last pod's end.
func makespan[T timed](ts []T, end func(T) time.Time) dist {
	if len(ts) == 0 {
		return dist{median: math.NaN(), p99: math.NaN()}
	}
	first, last := ts[0].start(), end(ts[0])
	for _, t := range ts {
		if t.start().Before(first) {
			first = t.start()
		}
		if end(t).After(last) {
			last = end(t)
		}
	}
	d := ms(last.Sub(first))
	return dist{n: 1, median: d, p99: d}
}

func started(t podTiming) time.Time  { return t.started }
func reported(t podTiming) time.Time { return t.reported }

func startedAfter(t podTiming) time.Duration  { return t.started.Sub(t.t0) }
func observedAfter(t podTiming) time.Duration { return t.observed.Sub(t.t0) }
func reportedAfter(t podTiming) time.Duration { return t.reported.Sub(t.t0) }

// step is when raw call i returned, after t0.
func step(i int) func(podTiming) time.Duration {
	return func(t podTiming) time.Duration { return t.steps[i].Sub(t.t0) }
}

// stepDelta is how long raw call i took.
func stepDelta(i int) func(podTiming) time.Duration {
	return func(t podTiming) time.Duration {
		if i == 0 {
			return t.steps[0].Sub(t.t0)
		}
		return t.steps[i].Sub(t.steps[i-1])
	}
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := sorted(xs)
	if n := len(s); n%2 == 0 {
		return (s[n/2-1] + s[n/2]) / 2
	}
	return s[len(s)/2]
}

// percentile is nearest-rank.
func percentile(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := sorted(xs)
	return s[int(math.Ceil(p*float64(len(s))))-1]
}

func sorted(xs []float64) []float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	return s
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
func mib(kib int64) float64      { return float64(kib) / 1024 }

func num(x float64) string {
	if math.IsNaN(x) {
		return "-"
	}
	return fmt.Sprintf("%.0f", x)
}

// --- agent log ------------------------------------------------------------

type logLine struct {
	at   time.Time
	text string
}

func logLines(log string) []logLine {
	var out []logLine
	sc := bufio.NewScanner(strings.NewReader(log))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		v, ok := strings.CutPrefix(sc.Text(), "time=")
		if !ok {
			continue
		}
		ts, _, _ := strings.Cut(v, " ")
		at, err := time.Parse(time.RFC3339Nano, ts)
		if err == nil {
			out = append(out, logLine{at, sc.Text()})
		}
	}
	return out
}

// firstLogTime is the time of the first line about pod that holds every
// match.
func firstLogTime(lines []logLine, pod string, match []string) (time.Time, bool) {
	key := "pod=" + namespace + "/" + pod
	for _, l := range lines {
		if !hasToken(l.text, key) {
			continue
		}
		all := true
		for _, m := range match {
			all = all && strings.Contains(l.text, m)
		}
		if all {
			return l.at, true
		}
	}
	return time.Time{}, false
}

func hasToken(line, tok string) bool {
	for _, f := range strings.Fields(line) {
		if f == tok {
			return true
		}
	}
	return false
}

// --- machine facts --------------------------------------------------------

func firstLine(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "?"
	}
	l, _, _ := strings.Cut(string(b), "\n")
	return strings.TrimSpace(l)
}

func loadAvg() string {
	f := strings.Fields(firstLine("/proc/loadavg"))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

func cpuModel() string {
	b, _ := os.ReadFile("/proc/cpuinfo")
	for _, l := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown CPU"
}

func runcVersion() string {
	out, err := exec.Command("runc", "--version").Output()
	if err != nil {
		return "runc ?"
	}
	l, _, _ := strings.Cut(string(out), "\n")
	return strings.TrimSpace(l)
}
