package containerd2

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/nodeagent/nodeagent/test/framework"
)

// e2eTests is the set of test/e2e's tests run on containerd 2, by what
// they cover.
var e2eTests = []string{
	// pod lifecycle
	"TestTwoContainerPodRunsWithKubeletLabels",
	"TestRestartPolicies",
	"TestInitContainersRunInOrder",
	"TestManifestRemovalStopsPodGracefully",
	"TestContainerConfigReachesTheContainer",
	// probes, exec and hooks
	"TestExecLivenessProbeRestartsContainer",
	"TestHTTPReadinessProbeFlipsReady",
	"TestTCPReadinessProbe",
	"TestPreStopHookRunsBeforeSIGTERM",
	// logs
	"TestContainerLogRotation",
	"TestFallbackToLogsReadsPartialLastLine",
	// volumes
	"TestNodeLocalVolumes",
	"TestFSGroupAndSubPathExpr",
	// restarts of the agent and of the runtime
	"TestAgentRestartLeavesContainersUntouched",
	"TestRuntimeOutageIsSurvived",
	// cgroups and the kernel's limits
	"TestPodCgroupLimits",
	"TestQOSCgroups",
	"TestOOMKilledContainer",
	"TestSeccompProfiles",
	// what containerd 1.6 refuses and containerd 2 runs
	"TestHostUsersFalse",
	"TestImageVolume",
	"TestSupplementalGroupsPolicyStrict",
}

// margin is left of this test's deadline for the child's own timeout to
// fire first, so that its report (which test hung) reaches this one.
const margin = 30 * time.Second

func TestE2EOnContainerd2(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root (containerd, runc, CNI)")
	}
	timeout := 40 * time.Minute
	if d, ok := t.Deadline(); ok {
		timeout = time.Until(d) - margin
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout+margin/2)
	defer cancel()
	start := time.Now()
	run, err := runE2E(ctx, t, timeout)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("test/e2e on containerd 2: %d tests in %s", len(run.results), time.Since(start).Round(time.Second))
	for _, name := range e2eTests {
		t.Run(name, func(t *testing.T) { checkResult(t, run, name) })
	}
}

// checkResult fails t unless the e2e test passed, with its output.
func checkResult(t *testing.T, run *e2eRun, name string) {
	r, ok := run.results[name]
	switch {
	case !ok:
		t.Errorf("did not run (go test ./test/e2e: %v); its output:\n%s", run.exit, run.pkgOutput)
	case r.action == "pass":
		t.Logf("passed in %.1fs", r.elapsed)
	case r.action == "skip":
		t.Errorf("skipped on containerd 2:\n%s", r.output.String())
	case r.action == "":
		t.Errorf("did not finish (go test ./test/e2e: %v):\n%s", run.exit, r.output.String())
	default:
		t.Errorf("%s:\n%s", r.action, r.output.String())
	}
}

// e2eRun is what `go test -json ./test/e2e` reported.
type e2eRun struct {
	results   map[string]*result // by top-level test
	pkgOutput string             // the output of no test: build errors, TestMain's
	exit      error
}

type result struct {
	action  string // pass, fail or skip
	elapsed float64
	output  strings.Builder
}

// event is a line of `go test -json` (cmd/test2json's TestEvent).
type event struct {
	Action  string
	Test    string
	Elapsed float64
	Output  string
}

// runE2E runs the set in test/e2e on the containerd2 instance.
func runE2E(ctx context.Context, t *testing.T, timeout time.Duration) (*e2eRun, error) {
	cmd := exec.CommandContext(ctx, "go", "test", "-json", "-count=1", "-timeout", timeout.String(),
		"-run", "^("+strings.Join(e2eTests, "|")+")$", "./test/e2e")
	cmd.Dir = framework.RepoRoot()
	cmd.Env = append(os.Environ(), framework.RuntimeEnv+"="+framework.Containerd2Instance.Name)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("go test ./test/e2e: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("go test ./test/e2e: %w", err)
	}
	run, err := readEvents(t, out)
	run.exit = cmd.Wait()
	if err != nil {
		return nil, fmt.Errorf("read go test ./test/e2e's events: %w", err)
	}
	return run, nil
}

// readEvents collects the results per top-level test (a subtest's output
// goes to its test) and logs each test as it ends.
func readEvents(t *testing.T, r io.Reader) (*e2eRun, error) {
	run := &e2eRun{results: map[string]*result{}}
	var pkg strings.Builder
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 4*1024*1024)
	for sc.Scan() {
		var ev event
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			pkg.WriteString(sc.Text() + "\n") // not an event: go's own output
			continue
		}
		if ev.Test == "" {
			if ev.Action == "output" {
				pkg.WriteString(ev.Output)
			}
			continue
		}
		top, sub, _ := strings.Cut(ev.Test, "/")
		res := run.results[top]
		if res == nil {
			res = &result{}
			run.results[top] = res
		}
		switch {
		case ev.Action == "output":
			res.output.WriteString(ev.Output)
		case sub == "" && (ev.Action == "pass" || ev.Action == "fail" || ev.Action == "skip"):
			res.action, res.elapsed = ev.Action, ev.Elapsed
			t.Logf("%s: %s (%.1fs)", top, ev.Action, ev.Elapsed)
		}
	}
	run.pkgOutput = pkg.String()
	return run, sc.Err()
}
