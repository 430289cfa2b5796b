package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	nart "github.com/nodeagent/nodeagent/pkg/runtime"
	"github.com/nodeagent/nodeagent/test/framework"
)

// Container logs are rotated at containerLogMaxSize, older rotations
// compressed, at most containerLogMaxFiles kept, and the container keeps
// logging into a fresh file.
func TestContainerLogRotation(t *testing.T) {
	a := newAgentWith(t, "containerLogMaxSize: 64Ki\ncontainerLogMaxFiles: 3\ncontainerLogMonitorInterval: 3s\n")
	if err := a.WriteManifest("chatty.yaml", `apiVersion: v1
kind: Pod
metadata: {name: chatty}
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: c
    image: `+framework.BusyboxImage+`
    command: ["sh", "-c", "trap 'exit 0' TERM; i=0; while true; do echo chatty line $i padded to make the log grow quickly; i=$((i+1)); sleep 0.002; done & wait"]
`); err != nil {
		t.Fatal(err)
	}
	p, err := a.WaitPod("chatty", podTimeout, running)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(nart.PodLogsDir(a.LogsDir, p.Namespace, p.Name, p.UID), "c")
	var names []string
	waitUntil(t, 2*podTimeout, "two rotations, the older compressed", func() bool {
		entries, _ := os.ReadDir(dir)
		names = names[:0]
		gz := 0
		for _, e := range entries {
			names = append(names, e.Name())
			if strings.HasSuffix(e.Name(), ".gz") {
				gz++
			}
		}
		return gz >= 1 && len(names) == 3
	})
	seen := map[string]bool{}
	for _, n := range names {
		seen[strings.TrimSuffix(n, ".gz")] = true
	}
	waitUntil(t, 2*podTimeout, "a further rotation", func() bool {
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if !seen[strings.TrimSuffix(e.Name(), ".gz")] {
				return true
			}
		}
		return false
	})
	entries, _ := os.ReadDir(dir)
	if len(entries) > 3 {
		t.Errorf("%d log files kept, want at most 3: %v", len(entries), entries)
	}
	if fi, err := os.Stat(filepath.Join(dir, "0.log")); err != nil || fi.Size() == 0 {
		t.Errorf("the current log after rotation: %v", err)
	}
	if p, _ = a.Pod("chatty"); status(t, p, "c").RestartCount != 0 {
		t.Errorf("the container restarted during rotation")
	}
}
