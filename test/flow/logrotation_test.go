package flow

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	nart "github.com/nodeagent/nodeagent/pkg/runtime"
	"github.com/nodeagent/nodeagent/test/framework"
)

// `kubectl logs -f` goes on across log rotations (containerLogMaxSize):
// the agent reads the rotated file to its end, then the new one, so the
// followed lines have no gap and no repeat.
func TestKubectlLogsFollowAcrossRotation(t *testing.T) {
	a := newAgentConfigured(t, framework.TestInstance, nodeName, cri,
		"containerLogMaxSize: 64Ki\ncontainerLogMaxFiles: 3\ncontainerLogMonitorInterval: 3s\n")
	waitSchedulable(t)
	deleteOnCleanup(t, "pod/chatty")
	mustKubectl(t, "apply", "-f", writeTemp(t, "chatty.yaml", `apiVersion: v1
kind: Pod
metadata: {name: chatty}
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: c
    image: `+framework.BusyboxImage+`
    command: ["sh", "-c", "trap 'exit 0' TERM; i=0; while true; do echo line $i padded so that the log grows quickly; i=$((i+1)); sleep 0.002; done & wait"]
`))
	p := waitPodRunning(t, "chatty")
	dir := filepath.Join(nart.PodLogsDir(a.LogsDir, p.Namespace, p.Name, p.UID), "c")

	ctx, cancel := context.WithCancel(context.Background())
	out := startKubectlOutput(t, ctx, cancel, "logs", "-f", "chatty")
	// Read all the time: a reader that paused would hold the follow back
	// behind kubectl's pipe while the files rotate on.
	var mu sync.Mutex
	var lines []int
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			mu.Lock()
			lines = append(lines, chattyLine(sc.Text()))
			mu.Unlock()
		}
	}()
	received := func() []int {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(lines)
	}
	waitFor(t, apiTimeout, "logs -f to print", func() (bool, error) { return len(received()) > 0, nil })
	before := rotatedFiles(dir)
	waitFor(t, apiTimeout, "two rotations after the follow began", func() (bool, error) {
		n := 0
		for name := range rotatedFiles(dir) {
			if !before[name] {
				n++
			}
		}
		return n >= 2, nil
	})
	// Every line up to the one being written now must come, in order.
	var target int
	waitFor(t, apiTimeout, "a complete line in the current log", func() (bool, error) {
		n, ok := lastLineOf(filepath.Join(dir, "0.log")) // just rotated: maybe empty
		target = n
		return ok, nil
	})
	waitFor(t, apiTimeout, fmt.Sprintf("logs -f to reach line %d", target), func() (bool, error) {
		got := received()
		return got[len(got)-1] >= target, nil
	})
	got := received()
	for i := 1; i < len(got); i++ {
		if got[i] != got[i-1]+1 {
			t.Fatalf("logs -f went from line %d to line %d (a gap or a repeat across rotation)", got[i-1], got[i])
		}
	}
}

// chattyLine is N of "line N padded ...", -1 for anything else.
func chattyLine(s string) int {
	f := strings.Fields(s)
	if len(f) < 2 || f[0] != "line" {
		return -1
	}
	return lineNumber(f[1])
}

// rotatedFiles names the rotated logs in dir (without .gz).
func rotatedFiles(dir string) map[string]bool {
	entries, _ := os.ReadDir(dir)
	out := map[string]bool{}
	for _, e := range entries {
		if e.Name() != "0.log" {
			out[strings.TrimSuffix(e.Name(), ".gz")] = true
		}
	}
	return out
}

// lastLineOf is the number of the last complete "line N" in a CRI log
// file; false when it has none yet.
func lastLineOf(path string) (int, bool) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	rows := strings.Split(strings.TrimSpace(string(data)), "\n")
	for i := len(rows) - 1; i >= 0; i-- {
		f := strings.Fields(rows[i])
		if len(f) >= 5 && f[2] == "F" && f[3] == "line" {
			return lineNumber(f[4]), true
		}
	}
	return 0, false
}
